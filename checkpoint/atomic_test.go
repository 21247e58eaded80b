package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

// crash is what the fault hook panics with to stop a save dead, as a
// killed process would: no deferred cleanup runs in the store.
type crash struct{ step string }

// crashAt makes s panic at the named step, once.
func crashAt(s *Store, step string) {
	s.fault = func(at string) {
		if at == step {
			s.fault = nil
			panic(crash{step})
		}
	}
}

// runToCrash calls f and reports the step it crashed at ("" if none).
func runToCrash(t *testing.T, f func()) (step string) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			c, ok := p.(crash)
			require.True(t, ok, "unexpected panic: %v", p)
			step = c.step
		}
	}()
	f()
	return ""
}

func tempEntries(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for _, name := range rootEntries(t, s) {
		if strings.HasPrefix(name, ".") {
			out = append(out, name)
		}
	}
	return out
}

func TestSaveCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	for i, step := range saveSteps {
		visible := slices.Index(saveSteps, stepRenamed) <= i
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			m := meta("r", policy.SamplerWeights, "000001", 1)
			crashAt(s, step)
			got := runToCrash(t, func() {
				_, _ = s.Save(context.Background(), m, writeFiles(adapterFiles(1)))
			})
			require.Equal(t, step, got)

			ck, err := s.Get("r", policy.SamplerWeights, "000001")
			list, lerr := s.List("r")
			require.NoError(t, lerr)
			runs, rerr := s.Runs()
			require.NoError(t, rerr)
			if visible {
				require.NoError(t, err)
				require.NoError(t, ck.Verify(context.Background()), "a visible checkpoint is whole")
				assert.Len(t, list, 1)
				assert.Equal(t, []string{"r"}, runs)
				assert.Empty(t, tempEntries(t, s))
			} else {
				require.ErrorIs(t, err, ErrNotFound, "a crash before the rename leaves nothing visible")
				assert.Empty(t, list)
				assert.Empty(t, runs, "List and Runs ignore temp folders")
				temps := tempEntries(t, s)
				require.Len(t, temps, 1)
				assert.True(t, strings.HasPrefix(temps[0], tempPrefix+"save-"), temps[0])
			}

			// A later Clean with a minimum age spares young leftovers…
			s.now = time.Now
			n, err := s.Clean(context.Background(), time.Hour)
			require.NoError(t, err)
			assert.Zero(t, n)
			// …and removes them once old enough.
			s.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
			n, err = s.Clean(context.Background(), time.Hour)
			require.NoError(t, err)
			assert.Equal(t, map[bool]int{false: 1, true: 0}[visible], n)
			assert.Empty(t, tempEntries(t, s))

			// The store works on: the save can be redone (or is already there).
			_, err = s.Save(context.Background(), m, writeFiles(adapterFiles(1)))
			if visible {
				assert.ErrorIs(t, err, ErrExists)
			} else {
				require.NoError(t, err)
			}
			ck, err = s.Get("r", policy.SamplerWeights, "000001")
			require.NoError(t, err)
			require.NoError(t, ck.Verify(context.Background()))
		})
	}
}

func TestSaveFailureAtEveryStepCleansUp(t *testing.T) {
	t.Parallel()
	// A writer that fails halfway through a file: nothing visible, nothing left.
	s := newStore(t)
	_, err := s.Save(context.Background(), meta("r", policy.State, "x", 1), func(dir string) error {
		f, err := os.Create(filepath.Join(dir, AdapterSafetensors))
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write(make([]byte, 100)); err != nil {
			return err
		}
		return fmt.Errorf("torn write after 100 bytes")
	})
	require.ErrorContains(t, err, "torn write")
	assert.Empty(t, rootEntries(t, s))
	// A cancelled context stops the hashing pass.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Save(ctx, meta("r", policy.State, "x", 1), writeFiles(adapterFiles(1)))
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, rootEntries(t, s))
}

func TestDeleteCrashLeavesNothingHalf(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	mustSave(t, s, meta("r", policy.State, "x", 1), 1)
	crashAt(s, stepTrashed)
	require.Equal(t, stepTrashed, runToCrash(t, func() { _ = s.Delete("r", policy.State, "x") }))
	_, err := s.Get("r", policy.State, "x")
	require.ErrorIs(t, err, ErrNotFound)
	temps := tempEntries(t, s)
	require.Len(t, temps, 1)
	assert.True(t, strings.HasPrefix(temps[0], trashPrefix))
	n, err := s.Clean(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Empty(t, tempEntries(t, s))
}

func TestInstallCrashBeforeRename(t *testing.T) {
	t.Parallel()
	src := newStore(t)
	ck := mustSave(t, src, meta("r", policy.SamplerWeights, "v1", 1), 1)
	dst := newStore(t)
	vol, err := src.Source(ck, SourceOptions{})
	require.NoError(t, err)
	for _, step := range []string{stepManifest, stepRename} {
		crashAt(dst, step)
		require.Equal(t, step, runToCrash(t, func() { _, _ = dst.Download(context.Background(), vol, DownloadOptions{}) }))
		_, err := dst.Get("r", policy.SamplerWeights, "v1")
		require.ErrorIs(t, err, ErrNotFound, step)
		n, err := dst.Clean(context.Background(), 0)
		require.NoError(t, err)
		assert.Equal(t, 1, n, step)
	}
	got, err := dst.Download(context.Background(), vol, DownloadOptions{})
	require.NoError(t, err)
	require.NoError(t, got.Verify(context.Background()))
	assert.Equal(t, ck.Manifest, got.Manifest)
}
