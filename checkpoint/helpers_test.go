package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the fixed clock of test stores.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	require.NoError(t, err)
	s.now = func() time.Time { return t0 }
	return s
}

// adapterFiles is a small PEFT-shaped checkpoint; the weights differ by seed.
func adapterFiles(seed byte) map[string]string {
	w := make([]byte, 3000)
	for i := range w {
		w[i] = byte(i)*7 + seed
	}
	return map[string]string{
		AdapterConfig:      `{"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}`,
		AdapterSafetensors: string(w),
	}
}

// writeFiles returns a writer that puts files (slash names) in its folder.
func writeFiles(files map[string]string) func(string) error {
	return func(dir string) error {
		for name, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

func meta(run string, kind policy.Kind, name string, v policy.Version) Meta {
	return Meta{Run: run, Kind: kind, Name: name, Version: v, Step: int64(v), BaseModel: "tiny/base-1"}
}

// mustSave saves an adapter checkpoint.
func mustSave(t testing.TB, s *Store, m Meta, seed byte) Checkpoint {
	t.Helper()
	ck, err := s.Save(context.Background(), m, writeFiles(adapterFiles(seed)))
	require.NoError(t, err)
	return ck
}

// rootEntries lists the names in the store root, sorted.
func rootEntries(t testing.TB, s *Store) []string {
	t.Helper()
	ents, err := os.ReadDir(s.Root())
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func ids(cks []Checkpoint) []string {
	var out []string
	for _, c := range cks {
		out = append(out, c.URI().String())
	}
	return out
}
