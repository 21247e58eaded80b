package hf

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine/safetensors"
)

// TestLoadBF16Matrices: a BF16 checkpoint loaded with WithBF16Matrices
// keeps its matrices as views of the mapped shards, and widened they equal
// the float32 load exactly; a float32 checkpoint loads in float32 as
// without the option.
func TestLoadBF16Matrices(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "qwen3-bf16-sharded")
	m16, info, err := Load[float32](dir, WithBF16Matrices())
	require.NoError(t, err)
	defer m16.Close()
	require.True(t, info.MatricesBF16)
	require.True(t, m16.IsBF16())
	var matrixBytes int64
	for _, tn := range m16.TensorsBF16() {
		matrixBytes += int64(2 * len(*tn.Data))
	}
	assert.Equal(t, matrixBytes, info.MappedBytes, "every matrix is a view of its mapped shard")
	m32, _, err := Load[float32](dir)
	require.NoError(t, err)
	w := m16.Widen()
	a, b := w.Tensors(), m32.Tensors()
	require.Equal(t, len(b), len(a))
	for i := range a {
		require.Equal(t, b[i].Name, a[i].Name)
		require.Equal(t, b[i].Data, a[i].Data, a[i].Name)
	}
	require.NoError(t, m16.Close())

	f, info, err := Load[float32](filepath.Join("testdata", "qwen2"), WithBF16Matrices())
	require.NoError(t, err)
	assert.False(t, info.MatricesBF16, "qwen2's weights are F32")
	assert.False(t, f.IsBF16())
}

// TestLoadBF16TiedHead: with the matrices in bfloat16, a tied model's
// lm_head.weight equal to embed_tokens is dropped, a different one is an
// error naming the option that keeps it, and with that option it is kept.
func TestLoadBF16TiedHead(t *testing.T) {
	t.Parallel()
	dir := copyCase(t, "qwen3-bf16-sharded")
	var embed safetensors.Tensor
	rewrite(t, dir, shard1, func(f *safetensors.File) { embed = f.Tensors["model.embed_tokens.weight"] })
	addHead := func(edit func([]byte)) {
		rewrite(t, dir, shard2, func(f *safetensors.File) {
			h := embed
			h.Data = append([]byte(nil), embed.Data...)
			edit(h.Data)
			f.Tensors["lm_head.weight"] = h
		})
		path := filepath.Join(dir, shardIndex)
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		var idx map[string]any
		require.NoError(t, json.Unmarshal(raw, &idx))
		idx["weight_map"].(map[string]any)["lm_head.weight"] = shard2
		writeJSON(t, path, idx)
	}
	addHead(func([]byte) {})
	m, info, err := Load[float32](dir, WithBF16Matrices())
	require.NoError(t, err)
	assert.True(t, info.MatricesBF16)
	assert.True(t, info.DroppedLMHead)
	assert.Nil(t, m.BF16.Unembed)
	require.NoError(t, m.Close())

	addHead(func(d []byte) { binary.LittleEndian.PutUint16(d, safetensors.F32ToBF16(7)) })
	_, _, err = Load[float32](dir, WithBF16Matrices())
	assert.ErrorContains(t, err, "hf.WithUntieDifferentHead()")
	m, info, err = Load[float32](dir, WithBF16Matrices(), WithUntieDifferentHead())
	require.NoError(t, err)
	defer m.Close()
	assert.True(t, info.Untied)
	assert.False(t, m.Config.TiedEmbed)
	require.Len(t, m.BF16.Unembed, len(m.BF16.Embed))
	assert.Equal(t, float32(7), m.BF16.Unembed[0].Float32())
	assert.Equal(t, m.BF16.Embed[1:], m.BF16.Unembed[1:])
	require.NoError(t, m.CheckBF16())
}
