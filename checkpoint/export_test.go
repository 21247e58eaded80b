package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

func TestExportCopiesOnlyTheAdapter(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	files := adapterFiles(4)
	files["optimizer/adam.bin"] = "moments"
	files["training_args.json"] = "{}"
	ck, err := s.Save(context.Background(), meta("r", policy.State, "final", 3), writeFiles(files))
	require.NoError(t, err)

	parent := t.TempDir()
	target := filepath.Join(parent, "lora", "v3")
	names, err := Export(context.Background(), ck, target, ExportOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{AdapterConfig, AdapterSafetensors}, names)
	assert.Equal(t, map[string]string{
		AdapterConfig:      files[AdapterConfig],
		AdapterSafetensors: files[AdapterSafetensors],
	}, dirFiles(t, target))
	ents, err := os.ReadDir(filepath.Join(parent, "lora"))
	require.NoError(t, err)
	require.Len(t, ents, 1, "no temp folder beside the target")

	// An existing target is refused unless Overwrite…
	_, err = Export(context.Background(), ck, target, ExportOptions{})
	require.ErrorIs(t, err, ErrExists)
	// …which replaces it whole.
	other := mustSave(t, s, meta("r", policy.SamplerWeights, "s9", 9), 9)
	_, err = Export(context.Background(), other, target, ExportOptions{Overwrite: true})
	require.NoError(t, err)
	want := adapterFiles(9)
	assert.Equal(t, want, dirFiles(t, target))
	ents, err = os.ReadDir(filepath.Join(parent, "lora"))
	require.NoError(t, err)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	sort.Strings(left)
	assert.Equal(t, []string{"v3"}, left, "old copy and temp folder removed")
}

func TestExportRefuses(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	noWeights, err := s.Save(context.Background(), meta("r", policy.State, "a", 1),
		writeFiles(map[string]string{AdapterConfig: "{}"}))
	require.NoError(t, err)
	noConfig, err := s.Save(context.Background(), meta("r", policy.State, "b", 1),
		writeFiles(map[string]string{AdapterSafetensors: "w"}))
	require.NoError(t, err)
	legacy, err := s.Save(context.Background(), meta("r", policy.State, "c", 1),
		writeFiles(map[string]string{AdapterConfig: "{}", AdapterBin: "w"}))
	require.NoError(t, err)
	corrupt := mustSave(t, s, meta("r", policy.State, "d", 1), 1)
	b, err := os.ReadFile(corrupt.Path(AdapterSafetensors))
	require.NoError(t, err)
	b[100] ^= 0x10
	require.NoError(t, os.WriteFile(corrupt.Path(AdapterSafetensors), b, 0o644))

	dir := t.TempDir()
	_, err = Export(context.Background(), noWeights, filepath.Join(dir, "a"), ExportOptions{})
	assert.ErrorIs(t, err, ErrNotAdapter)
	assert.ErrorContains(t, err, AdapterSafetensors)
	_, err = Export(context.Background(), noConfig, filepath.Join(dir, "b"), ExportOptions{})
	assert.ErrorIs(t, err, ErrNotAdapter)
	assert.ErrorContains(t, err, AdapterConfig)
	names, err := Export(context.Background(), legacy, filepath.Join(dir, "c"), ExportOptions{})
	require.NoError(t, err, "the legacy .bin weights are an adapter too")
	assert.Equal(t, []string{AdapterConfig, AdapterBin}, names)
	_, err = Export(context.Background(), corrupt, filepath.Join(dir, "d"), ExportOptions{})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, AdapterSafetensors)

	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "only the good export exists; failed ones left nothing")
	assert.Equal(t, "c", ents[0].Name())
}
