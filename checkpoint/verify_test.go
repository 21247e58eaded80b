package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func TestVerifyCatchesDamage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		damage  func(t *testing.T, ck Checkpoint)
		file    string
		problem string
	}{
		{"flipped byte", func(t *testing.T, ck Checkpoint) {
			p := ck.Path(AdapterSafetensors)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[len(b)/2] ^= 0x01
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, AdapterSafetensors, "sha256"},
		{"truncated", func(t *testing.T, ck Checkpoint) {
			require.NoError(t, os.Truncate(ck.Path(AdapterSafetensors), 10))
		}, AdapterSafetensors, "size 10, manifest says 3000"},
		{"missing", func(t *testing.T, ck Checkpoint) {
			require.NoError(t, os.Remove(ck.Path(AdapterConfig)))
		}, AdapterConfig, "missing"},
		{"extra", func(t *testing.T, ck Checkpoint) {
			require.NoError(t, os.WriteFile(ck.Path("zzz.bin"), []byte("x"), 0o644))
		}, "zzz.bin", "not listed"},
		{"symlink swapped in", func(t *testing.T, ck Checkpoint) {
			p := ck.Path(AdapterConfig)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("/etc/hostname", p))
		}, AdapterConfig, "want a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ck := mustSave(t, s, meta("r", policy.SamplerWeights, "x", 1), 5)
			require.NoError(t, ck.Verify(context.Background()))
			tc.damage(t, ck)
			err := ck.Verify(context.Background())
			require.ErrorIs(t, err, ErrCorrupt)
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.file, ce.File)
			assert.Contains(t, ce.Problem, tc.problem)
			assert.Contains(t, err.Error(), tc.file, "the message names the file")
		})
	}
}

func TestVerifyIsNotFooledByAnEditedManifest(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ck := mustSave(t, s, meta("r", policy.SamplerWeights, "x", 1), 5)
	// Change a file and "fix" only the size in the manifest: the hash still differs.
	require.NoError(t, os.WriteFile(ck.Path(AdapterConfig), []byte(`{"r": 64}`), 0o644))
	for i := range ck.Files {
		if ck.Files[i].Name == AdapterConfig {
			ck.Files[i].Size = int64(len(`{"r": 64}`))
		}
	}
	data, err := ck.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(ck.Dir, ManifestName), data, 0o644))
	got, err := s.Get("r", policy.SamplerWeights, "x")
	require.NoError(t, err)
	err = got.Verify(context.Background())
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "sha256")
}
