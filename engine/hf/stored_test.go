package hf

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/safetensors"
)

const sharded = "qwen3-bf16-sharded"

// toF16 rewrites every floating tensor of dir's weight files (files) as
// F16, rounded from its stored value: a BF16 checkpoint becomes an F16 one.
func toF16(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, file := range files {
		rewrite(t, dir, file, func(f *safetensors.File) {
			for name, tn := range f.Tensors {
				x, err := tn.Floats64()
				require.NoError(t, err)
				h, err := safetensors.FromFloats(safetensors.F16, tn.Shape, x)
				require.NoError(t, err)
				f.Tensors[name] = h
			}
		})
	}
}

// shardedF16 is a copy of the sharded tied BF16 checkpoint with every
// weight in F16.
func shardedF16(t *testing.T) string {
	t.Helper()
	dir := copyCase(t, sharded)
	toF16(t, dir, shard1, shard2)
	return dir
}

// misalign rewrites dir/file with one more byte of header, so that every
// tensor in it starts at an odd offset and cannot be viewed in place.
func misalign(t *testing.T, dir, file string) {
	t.Helper()
	path := filepath.Join(dir, file)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint64(b)
	out := binary.LittleEndian.AppendUint64(nil, n+1)
	out = append(append(append(out, b[8:8+n]...), ' '), b[8+n:]...)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// matrixBytes is the bytes of m's 16-bit matrices.
func matrixBytes(m *engine.Model[float32]) int64 {
	var n int64
	for _, tn := range m.TensorsBF16() {
		n += int64(2 * len(*tn.Data))
	}
	for _, tn := range m.TensorsF16() {
		n += int64(2 * len(*tn.Data))
	}
	return n
}

// TestLoadStoredMatrices: WithStoredMatrices keeps a BF16 checkpoint's
// matrices in bfloat16 and an F16 one's in IEEE half precision, as views
// of the mapped shards, and widened they equal the float32 load exactly;
// WithBF16Matrices does so for BF16 alone; a float32 checkpoint loads in
// float32 as without either.
func TestLoadStoredMatrices(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		dir       func(t *testing.T) string
		opt       Option
		bf16, f16 bool // the matrices kept: bfloat16, IEEE half
	}{
		{"bf16/stored", func(*testing.T) string { return filepath.Join("testdata", sharded) }, WithStoredMatrices(), true, false},
		{"bf16/bf16", func(*testing.T) string { return filepath.Join("testdata", sharded) }, WithBF16Matrices(), true, false},
		{"f16/stored", func(*testing.T) string { return filepath.Join("testdata", "mistral-f16") }, WithStoredMatrices(), false, true},
		{"f16-sharded-tied/stored", shardedF16, WithStoredMatrices(), false, true},
		{"f16/bf16", func(*testing.T) string { return filepath.Join("testdata", "mistral-f16") }, WithBF16Matrices(), false, false},
		{"f32/stored", func(*testing.T) string { return filepath.Join("testdata", "qwen2") }, WithStoredMatrices(), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := tc.dir(t)
			m16, info, err := Load[float32](dir, tc.opt)
			require.NoError(t, err)
			defer m16.Close()
			assert.Equal(t, tc.bf16, info.MatricesBF16)
			assert.Equal(t, tc.f16, info.MatricesF16)
			assert.Equal(t, tc.bf16, m16.IsBF16())
			assert.Equal(t, tc.f16, m16.IsF16())
			assert.Equal(t, matrixBytes(m16), info.MappedBytes, "every matrix is a view of its mapped shard")
			m32, _, err := Load[float32](dir)
			require.NoError(t, err)
			a, b := m16.Widen().Tensors(), m32.Tensors()
			require.Equal(t, len(b), len(a))
			for i := range a {
				require.Equal(t, b[i].Name, a[i].Name)
				require.Equal(t, b[i].Data, a[i].Data, a[i].Name)
			}
			require.NoError(t, m16.Close())
		})
	}
}

// TestLoadF16MatchesFloat32: an F16 checkpoint's matrices kept in half
// precision compute what the same checkpoint widened to float32 computes,
// bit for bit (kernels.Par.SgemmF16 is Sgemm on the widened weights): the
// base log-probs, a LoRA step's log-probs, loss and gradient norm, the
// adapter after it, and sampled tokens with their log-probs.
func TestLoadF16MatchesFloat32(t *testing.T) {
	t.Parallel()
	for name, dir := range map[string]func(t *testing.T) string{
		"mistral-f16":       func(*testing.T) string { return filepath.Join("testdata", "mistral-f16") },
		"qwen3-f16-sharded": shardedF16,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := dir(t)
			h, info, err := Load[float32](dir, WithStoredMatrices())
			require.NoError(t, err)
			defer h.Close()
			require.True(t, info.MatricesF16)
			w, _, err := Load[float32](dir)
			require.NoError(t, err)
			require.False(t, w.Is16())
			data := []engine.Example{
				{Input: []int{1, 5, 9, 13, 17, 21, 25, 29}, Targets: []int{5, 9, 13, 17, 21, 25, 29, 33}},
				{Input: []int{1, 5, 9, 40, 41}, Targets: []int{5, 9, 40, 41, 3}},
			}
			type result struct {
				base    [][]float64
				out     engine.Output
				step    map[string]float64
				adapter *engine.Adapter[float32]
				seqs    []engine.Sequence
				prompt  []float64
			}
			run := func(m *engine.Model[float32]) result {
				var r result
				tr, err := engine.NewTrainer(m, engine.LoraConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: !m.Config.TiedEmbed, Seed: 3}, engine.TrainerOptions{Threads: 2})
				require.NoError(t, err)
				r.base, err = tr.BaseLogprobs(t.Context(), data)
				require.NoError(t, err)
				r.out, err = tr.ForwardBackward(t.Context(), data, engine.LossSpec{Name: engine.CrossEntropy})
				require.NoError(t, err)
				r.step, err = tr.OptimStep(engine.AdamParams{LearningRate: 0.01})
				require.NoError(t, err)
				r.adapter = tr.Adapter()
				s, err := engine.NewSampler(m, engine.SamplerOptions{Threads: 2})
				require.NoError(t, err)
				defer s.Close()
				require.NoError(t, s.SetAdapter(r.adapter))
				r.seqs, r.prompt, err = s.Sample(t.Context(), data[0].Input, 3, engine.SamplingParams{MaxTokens: 12, Temperature: 1, Seed: 5, PromptLogprobs: true})
				require.NoError(t, err)
				return r
			}
			got, want := run(h), run(w)
			assert.Equal(t, want.base, got.base, "base log-probs")
			assert.Equal(t, want.out, got.out, "a LoRA step's log-probs and metrics")
			assert.Equal(t, want.step, got.step, "the optimizer step's metrics")
			assert.Equal(t, want.adapter, got.adapter, "the adapter after one step")
			assert.Equal(t, want.seqs, got.seqs, "sampled tokens and log-probs")
			assert.Equal(t, want.prompt, got.prompt, "prompt log-probs")
		})
	}
}

// TestLoad16TiedHead: with the matrices in bfloat16 or in IEEE half
// precision, a tied model's lm_head.weight equal to embed_tokens is
// dropped, a different one is an error naming the option that keeps it,
// and with that option it is kept (a view of its mapped shard); a head in
// another dtype is an error naming the option that loads it.
func TestLoad16TiedHead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		dir   func(t *testing.T) string
		opt   Option
		seven func([]byte) // writes 7 as the first element
	}{
		{"bf16", func(t *testing.T) string { return copyCase(t, sharded) }, WithBF16Matrices(),
			func(d []byte) { binary.LittleEndian.PutUint16(d, safetensors.F32ToBF16(7)) }},
		{"f16", shardedF16, WithStoredMatrices(),
			func(d []byte) { binary.LittleEndian.PutUint16(d, safetensors.F32ToF16(7)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := tc.dir(t)
			var embed safetensors.Tensor
			rewrite(t, dir, shard1, func(f *safetensors.File) { embed = f.Tensors["model.embed_tokens.weight"] })
			addHead := func(head func() safetensors.Tensor) {
				rewrite(t, dir, shard2, func(f *safetensors.File) { f.Tensors["lm_head.weight"] = head() })
				path := filepath.Join(dir, shardIndex)
				raw, err := os.ReadFile(path)
				require.NoError(t, err)
				var idx map[string]any
				require.NoError(t, json.Unmarshal(raw, &idx))
				idx["weight_map"].(map[string]any)["lm_head.weight"] = shard2
				writeJSON(t, path, idx)
			}
			edited := func(edit func([]byte)) func() safetensors.Tensor {
				return func() safetensors.Tensor {
					h := embed
					h.Data = append([]byte(nil), embed.Data...)
					edit(h.Data)
					return h
				}
			}
			addHead(edited(func([]byte) {}))
			m, info, err := Load[float32](dir, tc.opt)
			require.NoError(t, err)
			assert.True(t, m.Is16())
			assert.True(t, info.DroppedLMHead)
			assert.Equal(t, matrixBytes(m), info.MappedBytes)
			require.NoError(t, m.Close())

			addHead(edited(tc.seven))
			_, _, err = Load[float32](dir, tc.opt)
			assert.ErrorContains(t, err, "hf.WithUntieDifferentHead()")
			m, info, err = Load[float32](dir, tc.opt, WithUntieDifferentHead())
			require.NoError(t, err)
			defer m.Close()
			assert.True(t, info.Untied)
			assert.False(t, m.Config.TiedEmbed)
			assert.Equal(t, matrixBytes(m), info.MappedBytes, "the kept head is a view too")
			w := m.Widen()
			require.Len(t, w.Unembed, len(w.Embed))
			assert.Equal(t, float32(7), w.Unembed[0])
			assert.Equal(t, w.Embed[1:], w.Unembed[1:])
			require.NoError(t, m.CheckBF16())
			require.NoError(t, m.CheckF16())

			addHead(func() safetensors.Tensor {
				x := make([]float64, len(embed.Data)/2)
				h, err := safetensors.FromFloats(safetensors.F32, embed.Shape, x)
				require.NoError(t, err)
				return h
			})
			_, _, err = Load[float32](dir, tc.opt)
			var we *WeightError
			require.True(t, errorsAs(err, &we), "typed error: %v", err)
			assert.Equal(t, "lm_head.weight", we.Tensor)
			assert.ErrorContains(t, err, "a tied lm_head must be "+map[string]string{"bf16": "BF16", "f16": "F16"}[tc.name])
		})
	}
}

// TestLoadStoredMatricesFiles: F16 matrices in a shard whose tensors are
// not 2-byte aligned are read into memory (the other shard's stay views);
// a matrix in BF16 among F16 ones loads the model in float32; a
// non-finite or misshapen F16 matrix is a *WeightError naming its file and
// tensor, whether it is viewed or read.
func TestLoadStoredMatricesFiles(t *testing.T) {
	t.Parallel()
	const q = "model.layers.0.self_attn.q_proj.weight" // in shard1
	t.Run("unaligned", func(t *testing.T) {
		t.Parallel()
		dir := shardedF16(t)
		want, _, err := Load[float32](dir)
		require.NoError(t, err)
		misalign(t, dir, shard1)
		m, info, err := Load[float32](dir, WithStoredMatrices())
		require.NoError(t, err)
		defer m.Close()
		require.True(t, info.MatricesF16)
		var second int64
		for _, tn := range m.TensorsF16() {
			if strings.HasPrefix(tn.Name, "model.layers.1.") {
				second += int64(2 * len(*tn.Data))
			}
		}
		assert.Positive(t, second)
		assert.Equal(t, second, info.MappedBytes, "only the aligned shard's matrices are views")
		assert.Equal(t, want.Tensors(), m.Widen().Tensors())
	})
	t.Run("mixed dtypes", func(t *testing.T) {
		t.Parallel()
		dir := shardedF16(t)
		rewrite(t, dir, shard1, func(f *safetensors.File) {
			x, err := f.Tensors[q].Floats64()
			require.NoError(t, err)
			f.Tensors[q], err = safetensors.FromFloats(safetensors.BF16, f.Tensors[q].Shape, x)
			require.NoError(t, err)
		})
		m, info, err := Load[float32](dir, WithStoredMatrices())
		require.NoError(t, err)
		assert.False(t, m.Is16())
		assert.False(t, info.MatricesBF16 || info.MatricesF16)
		assert.Zero(t, info.MappedBytes)
		assert.Equal(t, []safetensors.DType{safetensors.BF16, safetensors.F16}, info.WeightDTypes)
	})
	bad := []struct {
		name  string
		edit  func(f *safetensors.File)
		wants []string
	}{
		{"+Inf", func(f *safetensors.File) { binary.LittleEndian.PutUint16(f.Tensors[q].Data[6:], 0x7c00) }, []string{"not finite", "element 3 is +Inf"}},
		{"NaN", func(f *safetensors.File) { binary.LittleEndian.PutUint16(f.Tensors[q].Data[2:], 0xfe01) }, []string{"not finite", "element 1 is NaN"}},
		{"shape", func(f *safetensors.File) {
			x := f.Tensors[q]
			x.Shape = []int{x.Shape[1], x.Shape[0]}
			f.Tensors[q] = x
		}, []string{"shape [48 64]; the config needs [64 48]"}},
	}
	for _, tc := range bad {
		for _, unaligned := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/mapped", true: "/read"}[unaligned], func(t *testing.T) {
				t.Parallel()
				dir := shardedF16(t)
				rewrite(t, dir, shard1, func(f *safetensors.File) {
					x := f.Tensors[q]
					x.Data = append([]byte(nil), x.Data...)
					f.Tensors[q] = x
					tc.edit(f)
				})
				if unaligned {
					misalign(t, dir, shard1)
				}
				_, _, err := Load[float32](dir, WithStoredMatrices())
				var we *WeightError
				require.True(t, errorsAs(err, &we), "typed error: %v", err)
				assert.Equal(t, filepath.Join(dir, shard1), we.File)
				assert.Equal(t, q, we.Tensor)
				for _, w := range tc.wants {
					assert.ErrorContains(t, err, w)
				}
			})
		}
	}
}
