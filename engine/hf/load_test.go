package hf

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine/safetensors"
)

// copyCase copies testdata/<name> into a fresh temporary folder.
func copyCase(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("testdata", name)
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
	return dir
}

// rewrite replaces dir/file (a safetensors file) by edit's result.
func rewrite(t *testing.T, dir, file string, edit func(f *safetensors.File)) {
	t.Helper()
	path := filepath.Join(dir, file)
	f, err := safetensors.ReadFile(path)
	require.NoError(t, err)
	edit(f)
	var ts []safetensors.Named
	for name, tn := range f.Tensors {
		ts = append(ts, safetensors.Named{Name: name, Tensor: tn})
	}
	b, err := safetensors.Encode(ts, f.Metadata)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func f32(x ...float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

const (
	plainQ     = "model.layers.0.self_attn.q_proj.weight"
	plainNorm  = "model.norm.weight"
	shard1     = "model-00001-of-00002.safetensors"
	shard2     = "model-00002-of-00002.safetensors"
	shardIndex = IndexFile
)

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		base   string // golden case to start from
		break_ func(t *testing.T, dir string)
		want   []string // substrings; the file named is checked separately
		file   string   // the file the error must name ("" = none checked)
	}{
		{"no config", "llama-plain", func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, ConfigFile))) },
			[]string{"cannot read the model config"}, ConfigFile},
		{"unknown model_type", "llama-plain", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
			require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), edit(t, string(b), `{"model_type":"phi3"}`), 0o644))
		}, []string{`"model_type" = "phi3"`}, ConfigFile},
		{"no weights", "llama-plain", func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, WeightsFile))) },
			[]string{"no model.safetensors and no model.safetensors.index.json"}, ""},
		{"pytorch bin", "llama-plain", func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(filepath.Join(dir, WeightsFile), filepath.Join(dir, "pytorch_model.bin")))
		}, []string{"PyTorch .bin checkpoints are not supported"}, ""},
		{"missing tensor", "llama-plain", func(t *testing.T, dir string) {
			rewrite(t, dir, WeightsFile, func(f *safetensors.File) { delete(f.Tensors, plainQ) })
		}, []string{plainQ, "missing; the config needs it with shape [32 32]"}, WeightsFile},
		{"wrong shape", "llama-plain", func(t *testing.T, dir string) {
			rewrite(t, dir, WeightsFile, func(f *safetensors.File) {
				x := f.Tensors[plainQ]
				x.Shape = []int{16, 64}
				f.Tensors[plainQ] = x
			})
		}, []string{plainQ, "shape [16 64]; the config needs [32 32]"}, WeightsFile},
		{"int dtype", "llama-plain", func(t *testing.T, dir string) {
			rewrite(t, dir, WeightsFile, func(f *safetensors.File) {
				x := f.Tensors[plainNorm]
				x.DType = safetensors.I32
				f.Tensors[plainNorm] = x
			})
		}, []string{plainNorm, "dtype I32; want BF16, F16, F32 or F64"}, WeightsFile},
		{"NaN", "llama-plain", func(t *testing.T, dir string) {
			rewrite(t, dir, WeightsFile, func(f *safetensors.File) {
				x := f.Tensors[plainNorm]
				x.Data = append(f32(float32(math.NaN())), x.Data[4:]...)
				f.Tensors[plainNorm] = x
			})
		}, []string{plainNorm, "not finite", "element 0 is NaN"}, WeightsFile},
		{"Inf", "llama-plain", func(t *testing.T, dir string) {
			rewrite(t, dir, WeightsFile, func(f *safetensors.File) {
				x := f.Tensors[plainNorm]
				x.Data = append(append([]byte{}, x.Data[:12]...), append(f32(float32(math.Inf(-1))), x.Data[16:]...)...)
				f.Tensors[plainNorm] = x
			})
		}, []string{plainNorm, "element 3 is -Inf"}, WeightsFile},
		{"unexpected tensor", "llama-plain", func(t *testing.T, dir string) {
			rewrite(t, dir, WeightsFile, func(f *safetensors.File) {
				f.Tensors["model.layers.0.mlp.gate_proj.bias"] = safetensors.Tensor{DType: safetensors.F32, Shape: []int{1}, Data: f32(1)}
			})
		}, []string{"model.layers.0.mlp.gate_proj.bias", "unexpected tensor", "allowed extras"}, WeightsFile},
		{"truncated file", "llama-plain", func(t *testing.T, dir string) {
			p := filepath.Join(dir, WeightsFile)
			st, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, st.Size()-10))
		}, []string{"bad safetensors header", "truncated file?"}, WeightsFile},
		{"header lies about its length", "llama-plain", func(t *testing.T, dir string) {
			p := filepath.Join(dir, WeightsFile)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			binary.LittleEndian.PutUint64(b, uint64(len(b)))
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, []string{"bad safetensors header", "exceeds"}, WeightsFile},
		{"header not json", "llama-plain", func(t *testing.T, dir string) {
			p := filepath.Join(dir, WeightsFile)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[8] = 'x'
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, []string{"not a JSON object"}, WeightsFile},
		{"tied head differs", "qwen3", func(t *testing.T, dir string) {
			rewrite(t, dir, WeightsFile, func(f *safetensors.File) {
				x := f.Tensors["lm_head.weight"]
				d := append([]byte{}, x.Data...)
				copy(d[len(d)-4:], f32(123))
				x.Data = d
				f.Tensors["lm_head.weight"] = x
			})
		}, []string{"lm_head.weight", "differs from model.embed_tokens.weight", "WithUntieDifferentHead"}, WeightsFile},
		{"tied head wrong shape", "qwen3", func(t *testing.T, dir string) {
			rewrite(t, dir, WeightsFile, func(f *safetensors.File) {
				f.Tensors["lm_head.weight"] = safetensors.Tensor{DType: safetensors.F32, Shape: []int{2, 2}, Data: f32(1, 2, 3, 4)}
			})
		}, []string{"lm_head.weight", "shape [2 2]"}, WeightsFile},
		{"missing shard", "qwen3-bf16-sharded", func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, shard2))) },
			[]string{"cannot open the weight file", "no such file"}, shard2},
		{"tensor not in index", "qwen3-bf16-sharded", func(t *testing.T, dir string) {
			idx := readIndex(t, dir)
			delete(idx["weight_map"].(map[string]any), plainNorm)
			writeJSON(t, filepath.Join(dir, shardIndex), idx)
		}, []string{plainNorm, "not listed in model.safetensors.index.json"}, shard2},
		{"index names the wrong file", "qwen3-bf16-sharded", func(t *testing.T, dir string) {
			idx := readIndex(t, dir)
			idx["weight_map"].(map[string]any)[plainNorm] = shard1
			writeJSON(t, filepath.Join(dir, shardIndex), idx)
		}, []string{plainNorm, "places it in " + shard1}, shard2},
		{"index lists a tensor the file lacks", "qwen3-bf16-sharded", func(t *testing.T, dir string) {
			idx := readIndex(t, dir)
			idx["weight_map"].(map[string]any)["model.layers.9.mlp.up_proj.weight"] = shard1
			writeJSON(t, filepath.Join(dir, shardIndex), idx)
		}, []string{"model.layers.9.mlp.up_proj.weight", "the file does not hold it"}, shard1},
		{"tensor in two shards", "qwen3-bf16-sharded", func(t *testing.T, dir string) {
			f2, err := safetensors.ReadFile(filepath.Join(dir, shard2))
			require.NoError(t, err)
			rewrite(t, dir, shard1, func(f *safetensors.File) { f.Tensors[plainNorm] = f2.Tensors[plainNorm] })
		}, []string{plainNorm, "places it in " + shard2}, shard1},
		{"tensor missing from every shard", "qwen3-bf16-sharded", func(t *testing.T, dir string) {
			idx := readIndex(t, dir)
			delete(idx["weight_map"].(map[string]any), plainNorm)
			writeJSON(t, filepath.Join(dir, shardIndex), idx)
			rewrite(t, dir, shard2, func(f *safetensors.File) { delete(f.Tensors, plainNorm) })
		}, []string{plainNorm, "missing from the index and from every shard"}, shardIndex},
		{"index path escape", "qwen3-bf16-sharded", func(t *testing.T, dir string) {
			idx := readIndex(t, dir)
			idx["weight_map"].(map[string]any)[plainNorm] = "../x.safetensors"
			writeJSON(t, filepath.Join(dir, shardIndex), idx)
		}, []string{"weight_map." + plainNorm, "file name in the model folder"}, shardIndex},
		{"index without weight_map", "qwen3-bf16-sharded", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, shardIndex), map[string]any{"metadata": map[string]any{}})
		}, []string{`"weight_map"`, "want an object"}, shardIndex},
		{"generation_config eos", "llama-plain", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, GenerationConfigFile), map[string]any{"eos_token_id": "</s>"})
		}, []string{`"eos_token_id" = "</s>"`}, GenerationConfigFile},
		{"eos outside vocab", "llama-plain", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, GenerationConfigFile), map[string]any{"eos_token_id": []int{2, 640}})
		}, []string{`"eos_token_id" = 640`, "outside the vocabulary [0, 64)"}, GenerationConfigFile},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := copyCase(t, tc.base)
			tc.break_(t, dir)
			_, _, err := Load[float32](dir)
			require.Error(t, err)
			msg := err.Error()
			t.Log(msg)
			if tc.file != "" {
				assert.Contains(t, msg, filepath.Join(dir, tc.file))
			} else {
				assert.Contains(t, msg, dir)
			}
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}
			var ce *ConfigError
			var we *WeightError
			assert.True(t, errorsAs(err, &ce) || errorsAs(err, &we), "typed error: %v", err)
		})
	}
}

func readIndex(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, shardIndex))
	require.NoError(t, err)
	var idx map[string]any
	require.NoError(t, json.Unmarshal(b, &idx))
	return idx
}

func TestLoadTiedHead(t *testing.T) {
	t.Parallel()
	dir := copyCase(t, "qwen3")
	m, info, err := Load[float64](dir)
	require.NoError(t, err)
	assert.True(t, info.DroppedLMHead)
	assert.Nil(t, m.Unembed)

	rewrite(t, dir, WeightsFile, func(f *safetensors.File) {
		x := f.Tensors["lm_head.weight"]
		d := append([]byte{}, x.Data...)
		copy(d[:4], f32(7))
		x.Data = d
		f.Tensors["lm_head.weight"] = x
	})
	m, info, err = Load[float64](dir, WithUntieDifferentHead())
	require.NoError(t, err)
	assert.True(t, info.Untied)
	assert.False(t, info.DroppedLMHead)
	assert.False(t, m.Config.TiedEmbed)
	require.Len(t, m.Unembed, len(m.Embed))
	assert.Equal(t, 7.0, m.Unembed[0])
	assert.Equal(t, m.Embed[1:], m.Unembed[1:])
	assert.NoError(t, m.Config.Validate())
}

func TestLoadMaxContext(t *testing.T) {
	t.Parallel()
	m, info, err := Load[float32](filepath.Join("testdata", "qwen2"), WithMaxContext(100))
	require.NoError(t, err)
	assert.Equal(t, 100, m.Config.Context)
	assert.Equal(t, 256, info.MaxPositions)
	_, _, err = Load[float32](filepath.Join("testdata", "qwen2"), WithMaxContext(-1))
	assert.ErrorIs(t, err, ErrConfig)
}

func TestLoadBF16Exact(t *testing.T) {
	t.Parallel()
	// Every BF16 value widens exactly: the float32 and float64 loads agree
	// bit for bit.
	m32, _, err := Load[float32](filepath.Join("testdata", "qwen3-bf16-sharded"))
	require.NoError(t, err)
	m64, _, err := Load[float64](filepath.Join("testdata", "qwen3-bf16-sharded"))
	require.NoError(t, err)
	a, b := m32.Tensors(), m64.Tensors()
	require.Equal(t, len(a), len(b))
	for i := range a {
		for j, x := range a[i].Data {
			require.Equal(t, float64(x), b[i].Data[j], a[i].Name)
			bits := math.Float32bits(x)
			require.Zero(t, bits&0xffff, "%s[%d] is not a widened bf16", a[i].Name, j)
		}
	}
}
