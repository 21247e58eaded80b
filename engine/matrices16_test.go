package engine

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine/kernels"
	"github.com/tandemrl/tandem/engine/safetensors"
)

// format16Case is one 16-bit format under test, by its exported API.
type format16Case struct {
	name  string // in CheckBF16/CheckF16's message
	store func(*Model[float32]) (*Model[float32], error)
	round func(float32) float32 // to the format and back
	is    func(*Model[float32]) bool
	check func(*Model[float32]) error
	zero  func(Config) (*Model[float32], error)
	// flip changes the first element of m's second matrix (a bit of it).
	flip  func(m *Model[float32])
	first func(m *Model[float32]) uint16 // that element's bits
}

var formats16 = []format16Case{
	{
		name: "bfloat16", store: StoreBF16[float32],
		round: func(x float32) float32 { return kernels.ToBF16(x).Float32() },
		is:    (*Model[float32]).IsBF16, check: (*Model[float32]).CheckBF16, zero: NewZeroModelBF16[float32],
		flip:  func(m *Model[float32]) { (*m.TensorsBF16()[1].Data)[0] ^= 1 },
		first: func(m *Model[float32]) uint16 { return uint16((*m.TensorsBF16()[1].Data)[0]) },
	},
	{
		name: "float16", store: StoreF16[float32],
		round: func(x float32) float32 { return kernels.ToF16(x).Float32() },
		is:    (*Model[float32]).IsF16, check: (*Model[float32]).CheckF16, zero: NewZeroModelF16[float32],
		flip:  func(m *Model[float32]) { (*m.TensorsF16()[1].Data)[0] ^= 1 },
		first: func(m *Model[float32]) uint16 { return uint16((*m.TensorsF16()[1].Data)[0]) },
	},
}

// TestModel16 covers a 16-bit model's life in each format: storing rounds
// the matrices and keeps the norms and biases, Widen gives them back
// exactly as rounded, Clone copies without sharing, NumParams counts both
// kinds, the check names a missing matrix, only one format is set, and the
// operations that need float weights (a full-parameter trainer) refuse it
// while Merge, SaveBase and ConvertModel work on its widened copy.
func TestModel16(t *testing.T) {
	t.Parallel()
	for _, f := range formats16 {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			cfg := hfTestConfig()
			cfg.QKVBias, cfg.QKNorm = true, true
			require.NoError(t, cfg.Validate())
			m := hfModel[float32](t, cfg, 8)
			h, err := f.store(m)
			require.NoError(t, err)
			require.True(t, f.is(h))
			require.True(t, h.Is16())
			assert.Equal(t, 1, btoi(h.IsBF16())+btoi(h.IsF16()), "one format at a time")
			require.NoError(t, f.check(h))
			assert.Nil(t, h.Blocks[0].Q, "the float matrix fields stay empty")
			assert.Equal(t, m.NumParams(), h.NumParams())

			w := h.Widen()
			require.False(t, w.Is16())
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
						want = f.round(orig[i])
					}
					require.Equal(t, want, x, "%s[%d]", tn.Name, i)
				}
			}
			assert.Same(t, m, m.Widen(), "a float model widens to itself")

			c := h.Clone()
			require.True(t, f.is(c))
			f.flip(c)
			assert.NotEqual(t, f.first(c), f.first(h), "a clone owns its matrices")

			bad, err := f.zero(cfg)
			require.NoError(t, err)
			assert.ErrorContains(t, f.check(bad), "model.embed_tokens.weight holds 0 "+f.name+" values")

			_, err = NewTrainer(h, DefaultLoraConfig(), TrainerOptions{Full: true})
			assert.ErrorContains(t, err, "needs a base in float")

			ad, err := NewAdapter[float32](cfg, DefaultLoraConfig())
			require.NoError(t, err)
			merged, err := Merge(h, ad)
			require.NoError(t, err)
			assert.False(t, merged.Is16(), "merging widens")
			path := filepath.Join(t.TempDir(), "base.safetensors")
			require.NoError(t, SaveBase(path, h, safetensors.F32))
			back, err := LoadBase[float32](path)
			require.NoError(t, err)
			assert.Equal(t, w.Tensors(), back.Tensors(), "saved, it reads back as the widened model")
			assert.False(t, ConvertModel[float64](h).Is16())
			require.NoError(t, h.Close(), "nothing mapped: a no-op")
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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
	l16, l32 := trainLosses(t, b16), trainLosses(t, b16.Widen())
	for i := range l16 {
		assert.InEpsilon(t, l32[i], l16[i], 1e-4, "step %d", i)
	}
	assert.Less(t, l16[7], 0.9*l16[0])
	t.Logf("LoRA over a bfloat16 base (%s): loss %.4f → %.4f in 8 steps; over it widened %.4f → %.4f", kernels.BF16Implementation(), l16[0], l16[7], l32[0], l32[7])
}

// TestTrainerOverF16Base: kernels.Par.SgemmF16 computes exactly what
// Sgemm does on the widened weights, so LoRA training over a float16 base
// is training over it widened to float32, bit for bit: every gradient of
// the first step, and the losses of 8 steps.
func TestTrainerOverF16Base(t *testing.T) {
	t.Parallel()
	cfg := qwenLikeConfig()
	cfg.TiedEmbed = false
	h, err := StoreF16(hfModel[float32](t, cfg, 9))
	require.NoError(t, err)
	w := h.Widen()
	ex := trainExamples()
	grads := func(base *Model[float32]) *Trainer[float32] {
		tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{Threads: 2})
		require.NoError(t, err)
		_, err = tr.ForwardBackward(context.Background(), ex, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		return tr
	}
	a, b := grads(h), grads(w)
	require.Equal(t, len(b.ps), len(a.ps))
	for k := range a.ps {
		require.Equal(t, b.ps[k].name, a.ps[k].name)
		for j, g := range a.ps[k].g {
			require.Equal(t, math.Float32bits(b.ps[k].g[j]), math.Float32bits(g), "%s[%d]", a.ps[k].name, j)
		}
	}
	l16, l32 := trainLosses(t, h), trainLosses(t, w)
	assert.Equal(t, l32, l16, "the losses of 8 steps")
	assert.Less(t, l16[7], 0.9*l16[0])
}

func trainExamples() []Example {
	return []Example{{Input: []int{1, 5, 9, 13, 17, 21, 25}, Targets: []int{5, 9, 13, 17, 21, 25, 29}}}
}

// trainLosses are the losses of 8 LoRA steps over base on one example.
func trainLosses(t *testing.T, base *Model[float32]) []float64 {
	tr, err := NewTrainer(base, LoraConfig{Rank: 4, TrainAttn: true, TrainMLP: true, Seed: 2}, TrainerOptions{Threads: 2})
	require.NoError(t, err)
	var out []float64
	for range 8 {
		o, err := tr.ForwardBackward(context.Background(), trainExamples(), LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		out = append(out, o.Metrics["loss:sum"])
		_, err = tr.OptimStep(AdamParams{LearningRate: 0.02})
		require.NoError(t, err)
	}
	return out
}

// TestSamplerOverF16Base: a sampler over a float16 base samples the very
// tokens, log-probs and prompt log-probs, bit for bit, that one over it
// widened to float32 samples, with an adapter on every layer (lm_head
// included) and without.
func TestSamplerOverF16Base(t *testing.T) {
	t.Parallel()
	for _, tied := range []bool{true, false} {
		cfg := qwenLikeConfig()
		cfg.TiedEmbed = tied
		h, err := StoreF16(hfModel[float32](t, cfg, 4))
		require.NoError(t, err)
		w := h.Widen()
		ad, err := NewAdapter[float32](cfg, DefaultLoraConfig())
		require.NoError(t, err)
		randomizeAdapter(ad, 3, 0.1)
		sample := func(base *Model[float32], ad *Adapter[float32]) ([]Sequence, []float64) {
			s, err := NewSampler(base, SamplerOptions{Threads: 2})
			require.NoError(t, err)
			defer s.Close()
			if ad != nil {
				require.NoError(t, s.SetAdapter(ad))
			}
			seqs, plp, err := s.Sample(context.Background(), []int{1, 7, 20, 33, 45, 12}, 4, SamplingParams{MaxTokens: 20, Temperature: 1, Seed: 7, PromptLogprobs: true})
			require.NoError(t, err)
			return seqs, plp
		}
		for _, a := range []*Adapter[float32]{nil, ad} {
			s16, p16 := sample(h, a)
			s32, p32 := sample(w, a)
			assert.Equal(t, s32, s16, "tied %v, adapter %v: sequences", tied, a != nil)
			assert.Equal(t, bits64(p32), bits64(p16), "tied %v, adapter %v: prompt log-probs", tied, a != nil)
		}
	}
}

func bits64(x []float64) []uint64 {
	out := make([]uint64, len(x))
	for i, v := range x {
		out[i] = math.Float64bits(v)
	}
	return out
}
