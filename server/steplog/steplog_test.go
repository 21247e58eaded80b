package steplog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server"
)

func TestWriterAppendsLinesThatReadBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log.jsonl")
	w, err := Open(path)
	require.NoError(t, err)
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				w.Append("m", server.StepEntry{Seq: int64(g*each + i), Kind: "forward", Status: server.StepApplied})
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.Close())

	// A second process appends to the same file.
	w2, err := Open(path)
	require.NoError(t, err)
	w2.Append("m2", server.StepEntry{Seq: 0, Kind: "optim_step", Status: server.StepApplied, Version: 1})
	require.NoError(t, w2.Close())

	recs, err := ReadFile(path)
	require.NoError(t, err)
	require.Len(t, recs, writers*each+1)
	seen := map[int64]bool{}
	for _, r := range recs[:writers*each] {
		assert.Equal(t, "m", r.Model)
		assert.Equal(t, os.Getpid(), r.PID)
		seen[r.Seq] = true
	}
	assert.Len(t, seen, writers*each, "every line whole and once")
	assert.Equal(t, policy.Version(1), recs[len(recs)-1].Version)
}

func TestReadSkipsTornLastLineOnly(t *testing.T) {
	t.Parallel()
	good := `{"model":"m","kind":"forward","seq_id":0,"status":"applied","version":0}` + "\n"
	cases := []struct {
		name  string
		in    string
		n     int
		error string
	}{
		{"empty", "", 0, ""},
		{"one", good, 1, ""},
		{"torn tail", good + `{"model":"m","ki`, 1, ""},
		{"blank lines", "\n" + good + "\n", 1, ""},
		{"garbage in the middle", good + "{oops}\n" + good, 1, "line 2"},
		{"missing model", `{"kind":"forward"}` + "\n", 0, "want fields model and kind"},
		{"too long", strings.Repeat("x", MaxLine+10) + "\n", 0, "longer than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, err := Read(strings.NewReader(c.in))
			if c.error != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.error)
			} else {
				require.NoError(t, err)
			}
			assert.Len(t, recs, c.n)
		})
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"model":"m","kind":"optim_step","seq_id":3,"status":"applied","version":2}` + "\n"))
	f.Add([]byte("{}\n{\"model\":1}\n"))
	f.Add([]byte("\n\n\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Model == "" || r.Kind == "" {
				t.Fatalf("accepted a record without model or kind: %+v", r)
			}
		}
		// Whatever reads back must audit without panicking.
		_, _ = Audit(recs)
	})
}
