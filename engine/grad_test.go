package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const gradTol = 1e-4

// rlExamples gives each token a sampler log-prob q chosen so that the ratio
// r = exp(p − q) takes the values in ratios (cycled), and advantages of both
// signs.
func rlExamples(t *testing.T, tr *Trainer[float64], data []Example, ratios []float64) []Example {
	t.Helper()
	out, err := tr.Forward(context.Background(), data, LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	k := 0
	res := make([]Example, len(data))
	for i, ex := range data {
		res[i] = Example{Input: ex.Input, Targets: ex.Targets}
		for j, p := range out.Logprobs[i] {
			r := ratios[k%len(ratios)]
			a := []float64{1.3, -0.7, 0.4, -1.1, 0.9}[k%5]
			res[i].Logprobs = append(res[i].Logprobs, p-math.Log(r))
			res[i].Advantages = append(res[i].Advantages, a)
			_ = j
			k++
		}
	}
	return res
}

func newTestTrainer(t *testing.T, lora LoraConfig, full bool) *Trainer[float64] {
	t.Helper()
	return newTestTrainerFor(t, tinyConfig(), lora, full)
}

func newTestTrainerFor(t *testing.T, cfg Config, lora LoraConfig, full bool) *Trainer[float64] {
	t.Helper()
	base, err := NewModel[float64](cfg, 3)
	require.NoError(t, err)
	// Non-trivial norms so their gradients are tested away from 1; biases
	// of both signs.
	rng := rand.New(rand.NewPCG(5, 5))
	for _, nt := range base.tensors() {
		if strings.HasSuffix(nt.Name, ".bias") {
			for i := range nt.Data {
				nt.Data[i] = 2*rng.Float64() - 1
			}
		} else if len(nt.Shape) == 1 {
			for i := range nt.Data {
				nt.Data[i] = 0.5 + rng.Float64()
			}
		} else {
			for i := range nt.Data {
				nt.Data[i] *= 10 // std 0.2: logits far from uniform
			}
		}
	}
	tr, err := NewTrainer(base, lora, TrainerOptions{Threads: 2, Full: full})
	require.NoError(t, err)
	if !full {
		randomizeAdapter(tr.ad, 11, 0.3)
	}
	return tr
}

func TestGradientsEveryLoss(t *testing.T) {
	t.Parallel()
	// Ratios inside and outside both clip ranges (PPO 0.8–1.2, CISPO 0–4,
	// custom 0.9–1.1), away from the kinks.
	ratios := []float64{0.5, 0.95, 1.05, 1.5, 5, 0.85, 1.15}
	cases := []struct {
		name string
		loss LossSpec
	}{
		{"cross_entropy", LossSpec{Name: CrossEntropy}},
		{"importance_sampling", LossSpec{Name: ImportanceSampling}},
		{"ppo", LossSpec{Name: PPO}},
		{"ppo_tight", LossSpec{Name: PPO, Config: map[string]float64{ClipLow: 0.9, ClipHigh: 1.1}}},
		{"cispo", LossSpec{Name: CISPO}},
		{"cispo_tight", LossSpec{Name: CISPO, Config: map[string]float64{ClipLow: 0.9, ClipHigh: 1.1}}},
		{"dro", LossSpec{Name: DRO, Config: map[string]float64{Beta: 0.3}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := newTestTrainer(t, DefaultLoraConfig(), false)
			data := randomExamples(rand.New(rand.NewPCG(1, 2)), 3, 6, tinyConfig().Vocab)
			if tc.loss.Name == CrossEntropy {
				for i := range data {
					for range data[i].Input {
						data[i].Weights = append(data[i].Weights, 0.25+float64(len(data[i].Weights))*0.5)
					}
				}
			} else {
				data = rlExamples(t, tr, data, ratios)
			}
			numData, numLoss := data, tc.loss
			if tc.loss.Name == CISPO {
				// −sg(clip(r))·A·p has the gradient of cross-entropy
				// weighted by clip(r)·A, r frozen at the current point.
				numData, numLoss = cispoSurrogate(t, tr, data, tc.loss), LossSpec{Name: CrossEntropy}
			}
			worst := gradCheckAgainst(t, tr, data, tc.loss, numData, numLoss, 4)
			for name, e := range worst {
				assert.Less(t, e, gradTol, "%s: %s", tc.name, name)
			}
			t.Logf("%s: max relative error %.2e", tc.name, maxOf(worst))
		})
	}
}

func TestGradientsEveryLoraKind(t *testing.T) {
	t.Parallel()
	tr := newTestTrainer(t, DefaultLoraConfig(), false)
	data := randomExamples(rand.New(rand.NewPCG(3, 4)), 3, 8, tinyConfig().Vocab)
	worst := gradCheck(t, tr, data, LossSpec{Name: CrossEntropy}, 12)
	kinds := map[string]bool{}
	for name, e := range worst {
		assert.Less(t, e, gradTol, name)
		for _, k := range []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"} {
			if strings.Contains(name, k+".lora_A") || strings.Contains(name, k+".lora_B") {
				kinds[k+strings.Split(name, k)[1][:7]] = true
			}
		}
	}
	assert.Len(t, kinds, 16, "every module's lora_A and lora_B checked: %v", kinds)
	t.Logf("lora: max relative error %.2e over %d tensors", maxOf(worst), len(worst))
}

func TestGradientsFullParameters(t *testing.T) {
	t.Parallel()
	tr := newTestTrainer(t, LoraConfig{}, true)
	data := randomExamples(rand.New(rand.NewPCG(8, 9)), 3, 8, tinyConfig().Vocab)
	worst := gradCheck(t, tr, data, LossSpec{Name: CrossEntropy}, 8)
	assert.Len(t, worst, len(tr.base.tensors()))
	for name, e := range worst {
		assert.Less(t, e, gradTol, name)
	}
	t.Logf("full: max relative error %.2e over %d tensors", maxOf(worst), len(worst))
}

func cispoSurrogate(t *testing.T, tr *Trainer[float64], data []Example, loss LossSpec) []Example {
	t.Helper()
	lo, hi := 0.0, 4.0
	if v, ok := loss.Config[ClipLow]; ok {
		lo = v
	}
	if v, ok := loss.Config[ClipHigh]; ok {
		hi = v
	}
	out, err := tr.Forward(context.Background(), data, loss)
	require.NoError(t, err)
	res := make([]Example, len(data))
	for i, ex := range data {
		res[i] = Example{Input: ex.Input, Targets: ex.Targets}
		for j, p := range out.Logprobs[i] {
			r := min(max(math.Exp(p-ex.Logprobs[j]), lo), hi)
			res[i].Weights = append(res[i].Weights, r*ex.Advantages[j])
		}
	}
	return res
}

func maxOf(m map[string]float64) float64 {
	x := 0.0
	for _, v := range m {
		x = math.Max(x, v)
	}
	return x
}

// tinyHFConfigs are tinyConfig's size with every Hugging Face option: 2
// query heads per KV head, a head width (4) that is not Dim/Heads (2), q/k
// norms, q/k/v and o biases, a tied or untied head, llama3 or yarn rope
// scaling active at every position.
func tinyHFConfigs() map[string]Config {
	c := Config{Vocab: 13, Dim: 8, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 4, Hidden: 12, Context: 10,
		QKNorm: true, QKVBias: true, OBias: true, RopeTheta: 100, NormEps: 1e-6}
	tied, untied := c, c
	tied.TiedEmbed = true
	tied.Rope = &RopeScaling{Type: "llama3", Factor: 4, LowFreqFactor: 0.5, HighFreqFactor: 2, OriginalContext: 4}
	untied.Rope = &RopeScaling{Type: "yarn", Factor: 3, OriginalContext: 4}
	return map[string]Config{"tied_llama3": tied, "untied_yarn": untied}
}

func TestGradientsHFOptionsLora(t *testing.T) {
	t.Parallel()
	for name, cfg := range tinyHFConfigs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, cfg.Validate())
			tr := newTestTrainerFor(t, cfg, DefaultLoraConfig(), false)
			data := randomExamples(rand.New(rand.NewPCG(3, 4)), 3, 8, cfg.Vocab)
			worst := gradCheck(t, tr, data, LossSpec{Name: CrossEntropy}, 12)
			kinds := map[string]bool{}
			for n, e := range worst {
				assert.Less(t, e, gradTol, n)
				for _, k := range []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"} {
					if strings.Contains(n, k+".lora_A") || strings.Contains(n, k+".lora_B") {
						kinds[k+strings.Split(n, k)[1][:7]] = true
					}
				}
			}
			assert.Len(t, kinds, 16, "every module's lora_A and lora_B checked: %v", kinds)
			t.Logf("%s lora: max relative error %.2e over %d tensors", name, maxOf(worst), len(worst))
		})
	}
}

func TestGradientsHFOptionsFull(t *testing.T) {
	t.Parallel()
	for name, cfg := range tinyHFConfigs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := newTestTrainerFor(t, cfg, LoraConfig{}, true)
			data := randomExamples(rand.New(rand.NewPCG(8, 9)), 3, 8, cfg.Vocab)
			loss := LossSpec{Name: CrossEntropy}
			worst := gradCheckStep(t, tr, data, loss, data, loss, 8, 1e-5)
			assert.Len(t, worst, len(tr.base.tensors()))
			for _, want := range []string{"q_proj.bias", "k_proj.bias", "v_proj.bias", "o_proj.bias", "q_norm.weight", "k_norm.weight", "embed_tokens"} {
				found := false
				for n := range worst {
					found = found || strings.Contains(n, want)
				}
				assert.True(t, found, "%s checked", want)
			}
			for n, e := range worst {
				assert.Less(t, e, gradTol, n)
			}
			t.Logf("%s full: max relative error %.2e over %d tensors", name, maxOf(worst), len(worst))
		})
	}
}
