package engine

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine/safetensors"
)

// qwenLikeConfig is a small model with Qwen3's and Qwen2's options: GQA, a
// head width unrelated to Dim/Heads, q/k norms, q/k/v biases and a tied
// head.
func qwenLikeConfig() Config {
	return Config{Vocab: 60, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 12, Hidden: 48, Context: 40,
		QKNorm: true, QKVBias: true, TiedEmbed: true, RopeTheta: 1e6, NormEps: 1e-6}
}

// TestSamplerMatchesTrainerHF samples from a GQA + q/k-norm + bias + tied
// model, with and without an adapter (lm_head included), and compares each
// sampled token's log-prob with the trainer's forward of the same sequence
// and with the sampler's own full recompute.
func TestSamplerMatchesTrainerHF(t *testing.T) {
	t.Parallel()
	cfg := qwenLikeConfig()
	t.Run("float32", func(t *testing.T) { t.Parallel(); checkSamplerHF(t, hfModel[float32](t, cfg, 4), 1e-4, 1e-5) })
	t.Run("float64", func(t *testing.T) { t.Parallel(); checkSamplerHF(t, hfModel[float64](t, cfg, 4), 1e-10, 1e-10) })
	t.Run("bfloat16 matrices", func(t *testing.T) {
		t.Parallel()
		b16, err := StoreBF16(hfModel[float32](t, cfg, 4))
		require.NoError(t, err)
		checkSamplerHF(t, b16, 1e-4, 1e-5)
	})
	t.Run("float16 matrices", func(t *testing.T) {
		t.Parallel()
		h16, err := StoreF16(hfModel[float32](t, cfg, 4))
		require.NoError(t, err)
		checkSamplerHF(t, h16, 1e-4, 1e-5)
	})
}

func checkSamplerHF[T Float](t *testing.T, base *Model[T], tolTrainer, tolCache float64) {
	cfg := base.Config
	ad, err := NewAdapter[T](cfg, DefaultLoraConfig())
	require.NoError(t, err)
	randomizeAdapter(ad, 3, 0.1)
	for _, withAd := range []bool{false, true} {
		s, err := NewSampler(base, SamplerOptions{Threads: 2})
		require.NoError(t, err)
		tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{Threads: 2})
		require.NoError(t, err)
		if withAd {
			require.NoError(t, s.SetAdapter(ad))
			tr.ad = ad.Clone()
			tr.buildParams()
		}
		prompt := []int{1, 7, 20, 33, 45, 12}
		seqs, plp, err := s.Sample(context.Background(), prompt, 4, SamplingParams{MaxTokens: 30, Temperature: 1, Seed: 7, PromptLogprobs: true})
		require.NoError(t, err)
		var data []Example
		for _, sq := range seqs {
			require.Len(t, sq.Tokens, 30)
			full := append(append([]int{}, prompt...), sq.Tokens...)
			data = append(data, Example{Input: full[:len(full)-1], Targets: full[1:]})
		}
		var out Output
		if withAd {
			out, err = tr.Forward(context.Background(), data, LossSpec{Name: CrossEntropy})
		} else {
			out.Logprobs, err = tr.BaseLogprobs(context.Background(), data)
		}
		require.NoError(t, err)
		gapTrainer, gapCache := 0.0, 0.0
		for i, sq := range seqs {
			cached, err := s.ComputeLogprobs(context.Background(), append(append([]int{}, prompt...), sq.Tokens...))
			require.NoError(t, err)
			for j, lp := range sq.Logprobs {
				gapTrainer = math.Max(gapTrainer, math.Abs(out.Logprobs[i][len(prompt)-1+j]-lp))
				gapCache = math.Max(gapCache, math.Abs(cached[len(prompt)+j]-lp))
			}
			for j := 1; j < len(prompt); j++ {
				gapTrainer = math.Max(gapTrainer, math.Abs(out.Logprobs[i][j-1]-plp[j]))
			}
		}
		assert.LessOrEqual(t, gapTrainer, tolTrainer, "adapter %v: sampler vs trainer", withAd)
		assert.LessOrEqual(t, gapCache, tolCache, "adapter %v: cached vs full", withAd)
		t.Logf("adapter %-5v max |sampler − trainer| %.2e, |cached − full| %.2e", withAd, gapTrainer, gapCache)
	}
}

// TestChunkedLogits runs the output layer in chunks of 3 rows and checks
// log-probs and gradients against one chunk for the whole batch, and the
// gradients against finite differences.
func TestChunkedLogits(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{"tandem": tinyConfig(), "tied_llama3": tinyHFConfigs()["tied_llama3"]} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := randomExamples(rand.New(rand.NewPCG(6, 6)), 4, 9, cfg.Vocab)
			whole := newTestTrainerFor(t, cfg, DefaultLoraConfig(), false)
			chunked := newTestTrainerFor(t, cfg, DefaultLoraConfig(), false)
			chunked.a.chunkRows = 3
			a, err := whole.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
			require.NoError(t, err)
			b, err := chunked.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
			require.NoError(t, err)
			for i := range a.Logprobs {
				assert.InDeltaSlice(t, a.Logprobs[i], b.Logprobs[i], 1e-12)
			}
			for k := range whole.ps {
				for j := range whole.ps[k].g {
					ga, gb := whole.ps[k].g[j], chunked.ps[k].g[j]
					require.InDelta(t, ga, gb, 1e-12*math.Max(1, math.Abs(ga)), "%s[%d]", whole.ps[k].name, j)
				}
			}
			worst := gradCheck(t, chunked, data, LossSpec{Name: CrossEntropy}, 6)
			for n, e := range worst {
				assert.Less(t, e, gradTol, n)
			}
		})
	}
}

// TestPEFTExportHF checks the PEFT folder of a GQA model: shapes A [r, in],
// B [out, r] with k/v out = KVDim and o in = QDim, modules_to_save null,
// use_dora false, base_model_name_or_path as given, and a load that checks
// shapes against the config.
func TestPEFTExportHF(t *testing.T) {
	t.Parallel()
	cfg := qwenLikeConfig()
	cfg.TiedEmbed = false
	lora := LoraConfig{Rank: 8, TrainAttn: true, TrainMLP: true}
	ad, err := NewAdapter[float32](cfg, lora)
	require.NoError(t, err)
	randomizeAdapter(ad, 1, 0.1)
	dir := t.TempDir()
	require.NoError(t, SaveAdapter(dir, ad, "Qwen/Qwen3-0.6B"))
	assert.Empty(t, VLLMProblems(dir, cfg), "vLLM loads it")
	raw, err := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
	require.NoError(t, err)
	var pc map[string]any
	require.NoError(t, json.Unmarshal(raw, &pc))
	assert.Contains(t, pc, "modules_to_save")
	assert.Nil(t, pc["modules_to_save"])
	assert.Equal(t, false, pc["use_dora"])
	assert.Equal(t, "Qwen/Qwen3-0.6B", pc["base_model_name_or_path"])
	f, err := safetensors.ReadFile(filepath.Join(dir, AdapterWeightsFile))
	require.NoError(t, err)
	q, kv := cfg.QDim(), cfg.KVDim()
	p := "base_model.model.model.layers.1."
	for name, shape := range map[string][]int{
		p + "self_attn.q_proj.lora_A.weight": {8, cfg.Dim}, p + "self_attn.q_proj.lora_B.weight": {q, 8},
		p + "self_attn.k_proj.lora_B.weight": {kv, 8}, p + "self_attn.v_proj.lora_B.weight": {kv, 8},
		p + "self_attn.o_proj.lora_A.weight": {8, q}, p + "self_attn.o_proj.lora_B.weight": {cfg.Dim, 8},
		p + "mlp.down_proj.lora_A.weight": {8, cfg.Hidden},
	} {
		require.Contains(t, f.Tensors, name)
		assert.Equal(t, shape, f.Tensors[name].Shape, name)
	}
	back, err := LoadAdapter[float32](dir, cfg)
	require.NoError(t, err)
	assert.Equal(t, ad.tensors(), back.tensors())
	other := cfg
	other.KVHeads = 4 // k/v projections of another width
	_, err = LoadAdapter[float32](dir, other)
	require.ErrorIs(t, err, ErrShape)
	assert.Contains(t, err.Error(), "k_proj")
	// A DoRA or modules_to_save config is refused.
	for key, val := range map[string]any{"use_dora": true, "modules_to_save": []string{"lm_head"}} {
		bad := map[string]any{}
		for k, v := range pc {
			bad[k] = v
		}
		bad[key] = val
		b, _ := json.Marshal(bad)
		d := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d, AdapterConfigFile), b, 0o644))
		_, err := ReadLoraConfig(d)
		assert.ErrorIs(t, err, ErrShape, key)
	}
}

// TestTiedUnembedAdapterPolicy: an lm_head adapter on a tied model trains
// and is served, SaveState and SaveAdapter (a PEFT export) keep it and load
// it back, and Merge refuses to fold it into the shared embedding.
func TestTiedUnembedAdapterPolicy(t *testing.T) {
	t.Parallel()
	cfg := qwenLikeConfig()
	base := hfModel[float32](t, cfg, 2)
	tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{})
	require.NoError(t, err)
	data := []Example{{Input: []int{1, 2, 3, 4}, Targets: []int{2, 3, 4, 5}}}
	_, err = tr.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	_, err = tr.OptimStep(AdamParams{LearningRate: 1e-2})
	require.NoError(t, err)
	assert.NotEqual(t, make([]float32, len(tr.ad.Unembed.B)), tr.ad.Unembed.B, "lm_head adapter trained")
	peft := t.TempDir()
	require.NoError(t, tr.SaveAdapter(peft))
	back, err := LoadAdapter[float32](peft, cfg)
	require.NoError(t, err)
	assert.Equal(t, tr.Adapter().Unembed, back.Unembed)
	_, err = Merge(base, tr.Adapter())
	assert.ErrorIs(t, err, ErrShape)
	state := t.TempDir()
	require.NoError(t, tr.SaveState(state))
	tr2, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{})
	require.NoError(t, err)
	require.NoError(t, tr2.LoadState(state, true))
	assert.Equal(t, tr.Adapter(), tr2.Adapter())
	noHead := LoraConfig{Rank: 4, TrainAttn: true, TrainMLP: true}
	ad, err := NewAdapter[float32](cfg, noHead)
	require.NoError(t, err)
	assert.NoError(t, SaveAdapter(t.TempDir(), ad, ""), "without lm_head a tied model exports")
}

// TestSetAdapterChecksShape rejects an adapter for another model.
func TestSetAdapterChecksShape(t *testing.T) {
	t.Parallel()
	cfg := qwenLikeConfig()
	base := hfModel[float32](t, cfg, 2)
	s, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	other := cfg
	other.KVHeads = 4
	ad, err := NewAdapter[float32](other, DefaultLoraConfig())
	require.NoError(t, err)
	assert.ErrorIs(t, s.SetAdapter(ad), ErrShape)
	same := cfg
	same.Rope = &RopeScaling{Type: "linear", Factor: 2}
	ad2, err := NewAdapter[float32](same, DefaultLoraConfig())
	require.NoError(t, err)
	assert.ErrorIs(t, s.SetAdapter(ad2), ErrShape, "rope scaling is part of the shape")
}
