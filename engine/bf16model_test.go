package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine/kernels"
	"github.com/tandemrl/tandem/engine/safetensors"
)

// TestModelBF16 covers a bfloat16 model's life: StoreBF16 rounds the
// matrices and keeps the norms and biases, Widen gives them back exactly
// as rounded, Clone copies without sharing, NumParams counts both kinds,
// CheckBF16 names a missing matrix, and the operations that need float
// weights (a full-parameter trainer) refuse it while Merge, SaveBase and
// ConvertModel work on its widened copy.
func TestModelBF16(t *testing.T) {
	t.Parallel()
	cfg := hfTestConfig()
	cfg.QKVBias, cfg.QKNorm = true, true
	require.NoError(t, cfg.Validate())
	m := hfModel[float32](t, cfg, 8)
	b16, err := StoreBF16(m)
	require.NoError(t, err)
	require.True(t, b16.IsBF16())
	require.NoError(t, b16.CheckBF16())
	assert.Nil(t, b16.Blocks[0].Q, "the float matrix fields stay empty")
	assert.Equal(t, m.NumParams(), b16.NumParams())

	w := b16.Widen()
	require.False(t, w.IsBF16())
	byName := map[string][]float32{}
	for _, tn := range m.tensors() {
		byName[tn.Name] = tn.Data
	}
	for _, tn := range w.tensors() {
		orig := byName[tn.Name]
		require.Len(t, tn.Data, len(orig), tn.Name)
		for i, x := range tn.Data {
			want := orig[i]
			if len(tn.Shape) == 2 {
				want = kernels.ToBF16(orig[i]).Float32()
			}
			require.Equal(t, want, x, "%s[%d]", tn.Name, i)
		}
	}
	assert.Same(t, m, m.Widen(), "a float model widens to itself")

	c := b16.Clone()
	require.True(t, c.IsBF16())
	(*c.TensorsBF16()[1].Data)[0] ^= 1
	assert.NotEqual(t, (*c.TensorsBF16()[1].Data)[0], (*b16.TensorsBF16()[1].Data)[0], "a clone owns its matrices")

	bad, err := NewZeroModelBF16[float32](cfg)
	require.NoError(t, err)
	assert.ErrorContains(t, bad.CheckBF16(), "model.embed_tokens.weight holds 0 bfloat16 values")

	_, err = NewTrainer(b16, DefaultLoraConfig(), TrainerOptions{Full: true})
	assert.ErrorContains(t, err, "needs a base in float")

	ad, err := NewAdapter[float32](cfg, DefaultLoraConfig())
	require.NoError(t, err)
	merged, err := Merge(b16, ad)
	require.NoError(t, err)
	assert.False(t, merged.IsBF16(), "merging widens")
	path := filepath.Join(t.TempDir(), "base.safetensors")
	require.NoError(t, SaveBase(path, b16, safetensors.BF16))
	assert.False(t, ConvertModel[float64](b16).IsBF16())
	require.NoError(t, b16.Close(), "nothing mapped: a no-op")
}

// TestTrainerOverBF16Base: LoRA training over a bfloat16 base follows
// training over the same weights widened to float32, step for step: the
// losses of 8 steps agree within 1e-4 relative (later, Adam on one example
// amplifies the last-bit differences of the products), and they fall.
func TestTrainerOverBF16Base(t *testing.T) {
	t.Parallel()
	cfg := hfTestConfig()
	b16, err := StoreBF16(hfModel[float32](t, cfg, 9))
	require.NoError(t, err)
	ex := []Example{{Input: []int{1, 5, 9, 13, 17, 21, 25}, Targets: []int{5, 9, 13, 17, 21, 25, 29}}}
	losses := func(base *Model[float32]) []float64 {
		tr, err := NewTrainer(base, LoraConfig{Rank: 4, TrainAttn: true, TrainMLP: true, Seed: 2}, TrainerOptions{Threads: 2})
		require.NoError(t, err)
		var out []float64
		for range 8 {
			o, err := tr.ForwardBackward(context.Background(), ex, LossSpec{Name: CrossEntropy})
			require.NoError(t, err)
			out = append(out, o.Metrics["loss:sum"])
			_, err = tr.OptimStep(AdamParams{LearningRate: 0.02})
			require.NoError(t, err)
		}
		return out
	}
	l16, l32 := losses(b16), losses(b16.Widen())
	for i := range l16 {
		assert.InEpsilon(t, l32[i], l16[i], 1e-4, "step %d", i)
	}
	assert.Less(t, l16[7], 0.9*l16[0])
	t.Logf("LoRA over a bfloat16 base (%s): loss %.4f → %.4f in 8 steps; over it widened %.4f → %.4f", kernels.BF16Implementation(), l16[0], l16[7], l32[0], l32[7])
}
