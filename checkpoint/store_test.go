package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func TestSaveGetListRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	m := meta("arith-grpo", policy.SamplerWeights, "000003", 3)
	m.Metrics = map[string]float64{"reward/mean": 0.75, "loss": -1.5}
	files := adapterFiles(1)
	files["optimizer/adam.bin"] = "moments"
	ck, err := s.Save(context.Background(), m, writeFiles(files))
	require.NoError(t, err)

	assert.Equal(t, filepath.Join(s.Root(), "arith-grpo", "sampler_weights", "000003"), ck.Dir)
	assert.Equal(t, t0, ck.Created, "zero Created is filled from the clock")
	require.Len(t, ck.Files, len(files))
	for _, f := range ck.Files {
		body, ok := files[f.Name]
		require.True(t, ok, f.Name)
		sum := sha256.Sum256([]byte(body))
		assert.Equal(t, hex.EncodeToString(sum[:]), f.SHA256, f.Name)
		assert.Equal(t, int64(len(body)), f.Size, f.Name)
	}

	got, err := s.Get("arith-grpo", policy.SamplerWeights, "000003")
	require.NoError(t, err)
	assert.Equal(t, ck, got)
	require.NoError(t, got.Verify(context.Background()))

	list, err := s.List("arith-grpo")
	require.NoError(t, err)
	assert.Equal(t, []Checkpoint{ck}, list)

	ref := ck.Ref()
	assert.Equal(t, policy.Ref{Run: "arith-grpo", Version: 3, Name: "000003", Kind: policy.SamplerWeights,
		URI: "tinker://arith-grpo/sampler_weights/000003", Created: t0}, ref)
	byRef, err := s.ResolveRef(ref)
	require.NoError(t, err)
	assert.Equal(t, ck, byRef)
	byPath, err := s.Resolve(ck.Dir)
	require.NoError(t, err)
	assert.Equal(t, ck, byPath)
}

func TestListLatestRunsDelete(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for v := range policy.Version(4) {
		mustSave(t, s, meta("run-a", policy.SamplerWeights, "s"+string(rune('0'+v)), v), byte(v))
	}
	mustSave(t, s, meta("run-a", policy.State, "final", 2), 9)
	mustSave(t, s, meta("run-b", policy.State, "x", 0), 9)
	// Same version saved twice under different names: the later created wins.
	later := meta("run-b", policy.State, "a-later", 0)
	later.Created = t0.Add(time.Minute)
	mustSave(t, s, later, 8)

	runs, err := s.Runs()
	require.NoError(t, err)
	assert.Equal(t, []string{"run-a", "run-b"}, runs)

	list, err := s.List("run-a")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"tinker://run-a/sampler_weights/s0", "tinker://run-a/sampler_weights/s1",
		"tinker://run-a/sampler_weights/s2", "tinker://run-a/weights/final",
		"tinker://run-a/sampler_weights/s3",
	}, ids(list), "by version, then kind, then name")

	latest, err := s.Latest("run-a", policy.SamplerWeights)
	require.NoError(t, err)
	assert.Equal(t, "s3", latest.Name)
	latest, err = s.Latest("run-b", policy.State)
	require.NoError(t, err)
	assert.Equal(t, "a-later", latest.Name)
	_, err = s.Latest("run-b", policy.SamplerWeights)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Latest("nobody", policy.State)
	assert.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, s.Delete("run-a", policy.SamplerWeights, "s3"))
	assert.ErrorIs(t, s.Delete("run-a", policy.SamplerWeights, "s3"), ErrNotFound)
	_, err = s.Get("run-a", policy.SamplerWeights, "s3")
	assert.ErrorIs(t, err, ErrNotFound)
	latest, err = s.Latest("run-a", policy.SamplerWeights)
	require.NoError(t, err)
	assert.Equal(t, "s2", latest.Name)
	assert.Equal(t, []string{"run-a", "run-b"}, rootEntries(t, s), "no trash left behind")

	require.NoError(t, s.Delete("run-b", policy.State, "x"))
	require.NoError(t, s.Delete("run-b", policy.State, "a-later"))
	runs, err = s.Runs()
	require.NoError(t, err)
	assert.Equal(t, []string{"run-a"}, runs, "a run with no checkpoints is not listed")
}

func TestListSkipsForeignAndReportsCorrupt(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	good := mustSave(t, s, meta("r", policy.SamplerWeights, "good", 1), 1)
	bad := mustSave(t, s, meta("r", policy.SamplerWeights, "bad", 2), 2)
	require.NoError(t, os.WriteFile(bad.Path(ManifestName), []byte("{not json"), 0o644))
	// A folder without a manifest, a hidden folder and a file are ignored.
	require.NoError(t, os.MkdirAll(filepath.Join(s.Root(), "r", "sampler_weights", "no-manifest"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(s.Root(), "r", "sampler_weights", ".hidden"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.Root(), "r", "sampler_weights", "file"), nil, 0o644))

	list, err := s.List("r")
	assert.Equal(t, []Checkpoint{good}, list)
	require.ErrorIs(t, err, ErrCorrupt)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, bad.Dir, ce.Dir)
	assert.Equal(t, ManifestName, ce.File)

	latest, err := s.Latest("r", policy.SamplerWeights)
	require.NoError(t, err, "Latest skips corrupt checkpoints")
	assert.Equal(t, "good", latest.Name)

	// A manifest copied into another checkpoint's folder is caught.
	moved := filepath.Join(s.Root(), "r", "sampler_weights", "moved")
	require.NoError(t, os.Rename(good.Dir, moved))
	_, err = s.Get("r", policy.SamplerWeights, "moved")
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Problem, "manifest names r/sampler_weights/good")
}

func TestSaveRefuses(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	mustSave(t, s, meta("r", policy.State, "taken", 1), 1)
	ok := writeFiles(adapterFiles(0))
	tests := []struct {
		name  string
		meta  Meta
		write func(string) error
		want  error
		msg   string
	}{
		{"exists", meta("r", policy.State, "taken", 2), ok, ErrExists, "r/weights/taken"},
		{"bad run", meta("../r", policy.State, "x", 1), ok, ErrBadName, "run name"},
		{"bad name", meta("r", policy.State, "a/b", 1), ok, ErrBadName, "checkpoint name"},
		{"bad kind", meta("r", "optimizer", "x", 1), ok, ErrBadName, `kind "optimizer"`},
		{"negative version", meta("r", policy.State, "x", -1), ok, ErrBadMeta, "version -1"},
		{"nan metric", func() Meta {
			m := meta("r", policy.State, "x", 1)
			m.Metrics = map[string]float64{"reward": nanValue()}
			return m
		}(), ok, ErrBadMeta, `metric "reward" is NaN`},
		{"writer error", meta("r", policy.State, "x", 1), func(string) error { return errors.New("disk full") }, nil, "disk full"},
		{"writer panic", meta("r", policy.State, "x", 1), func(string) error { panic("boom") }, nil, "writer panicked: boom"},
		{"writes manifest", meta("r", policy.State, "x", 1), writeFiles(map[string]string{ManifestName: "{}"}), nil, "reserves"},
		{"writes nothing", meta("r", policy.State, "x", 1), func(string) error { return nil }, nil, "no files"},
		{"writes symlink", meta("r", policy.State, "x", 1), func(dir string) error {
			return os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
		}, ErrCorrupt, "want a regular file"},
		{"writes hidden file", meta("r", policy.State, "x", 1), writeFiles(map[string]string{".secret": "x"}), ErrCorrupt, "starting with '.'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Save(context.Background(), tc.meta, tc.write)
			require.Error(t, err)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			}
			assert.Contains(t, err.Error(), tc.msg)
			assert.Equal(t, []string{"r"}, rootEntries(t, s), "no temp folder left after a failed save")
		})
	}
}

func TestConcurrentSavesOfOneNameOneWins(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := s.Save(context.Background(), meta("r", policy.SamplerWeights, "same", 1), writeFiles(adapterFiles(byte(i))))
			errs <- err
		}()
	}
	wins := 0
	for range n {
		err := <-errs
		if err == nil {
			wins++
		} else {
			require.ErrorIs(t, err, ErrExists)
		}
	}
	assert.Equal(t, 1, wins)
	ck, err := s.Get("r", policy.SamplerWeights, "same")
	require.NoError(t, err)
	require.NoError(t, ck.Verify(context.Background()))
	assert.Equal(t, []string{"r"}, rootEntries(t, s))
}

func TestOpenRefusesEmptyRoot(t *testing.T) {
	t.Parallel()
	_, err := Open("")
	assert.ErrorContains(t, err, "root folder is empty")
}
