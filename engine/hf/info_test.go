package hf

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/safetensors"
)

// TestLoadGoldenConfigs checks what Load makes of each golden folder's
// config and files, independently of the forward pass.
func TestLoadGoldenConfigs(t *testing.T) {
	t.Parallel()
	ctx := func(c engine.Config) engine.Config { return c }
	cases := []struct {
		name string
		cfg  engine.Config
		info Info
	}{
		{"llama-plain", ctx(engine.Config{Vocab: 64, Dim: 32, Layers: 2, Heads: 4, Hidden: 64, Context: 128, RopeTheta: 10000, NormEps: 1e-5}),
			Info{ModelType: "llama", Architecture: "LlamaForCausalLM", BOS: 1, EOS: []int{2, 4}, MaxPositions: 128, DType: "float32"}},
		{"llama", engine.Config{Vocab: 96, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 80, Context: 128, RopeTheta: 500000, NormEps: 1e-5,
			Rope: &engine.RopeScaling{Type: "llama3", Factor: 4, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 16}},
			Info{ModelType: "llama", Architecture: "LlamaForCausalLM", BOS: 1, EOS: []int{2, 3}, MaxPositions: 128, DType: "float32"}},
		{"llama-tied-bias", engine.Config{Vocab: 80, Dim: 24, Layers: 2, Heads: 3, KVHeads: 1, Hidden: 48, Context: 64, RopeTheta: 10000, NormEps: 1e-5,
			QKVBias: true, OBias: true, TiedEmbed: true, Rope: &engine.RopeScaling{Type: "linear", Factor: 2}},
			Info{ModelType: "llama", Architecture: "LlamaForCausalLM", BOS: 1, EOS: []int{2, 4}, MaxPositions: 64, DType: "float32"}},
		{"qwen2", engine.Config{Vocab: 128, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 64, Context: 256, RopeTheta: 1e6, NormEps: 1e-6,
			QKVBias: true, TiedEmbed: true},
			Info{ModelType: "qwen2", Architecture: "Qwen2ForCausalLM", BOS: 1, EOS: []int{2, 4}, MaxPositions: 256, DType: "bfloat16"}},
		{"qwen3", engine.Config{Vocab: 100, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Hidden: 64, Context: 256, RopeTheta: 1e6, NormEps: 1e-6,
			QKNorm: true, TiedEmbed: true},
			Info{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", BOS: 1, EOS: []int{2, 4}, MaxPositions: 256, DType: "bfloat16", DroppedLMHead: true}},
		{"qwen3-bf16-sharded", engine.Config{Vocab: 300, Dim: 48, Layers: 2, Heads: 4, KVHeads: 1, HeadDim: 16, Hidden: 96, Context: 512, RopeTheta: 1e6, NormEps: 1e-6,
			QKNorm: true, TiedEmbed: true},
			Info{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", BOS: 1, EOS: []int{3, 4}, MaxPositions: 512, DType: "bfloat16"}},
		{"qwen3-v5", engine.Config{Vocab: 90, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 64, Context: 256, RopeTheta: 1e6, NormEps: 1e-6, QKNorm: true},
			Info{ModelType: "qwen3", Architecture: "Qwen3ForCausalLM", BOS: 1, EOS: []int{2, 4}, MaxPositions: 256, DType: "float32"}},
		{"llama-yarn", engine.Config{Vocab: 72, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 64, Context: 64, RopeTheta: 10000, NormEps: 1e-5,
			Rope: &engine.RopeScaling{Type: "yarn", Factor: 4, OriginalContext: 64, AttentionFactor: 0.1*1.3862943611198906 + 1, BetaFast: 32, BetaSlow: 1}},
			Info{ModelType: "llama", Architecture: "LlamaForCausalLM", BOS: 1, EOS: []int{2, 4}, MaxPositions: 64, DType: "float32"}},
		{"mistral-f16", engine.Config{Vocab: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 64, Context: 128, RopeTheta: 10000, NormEps: 1e-5},
			Info{ModelType: "mistral", Architecture: "MistralForCausalLM", BOS: 1, EOS: []int{2, 4}, MaxPositions: 128, DType: "float16", SlidingWindow: 128}},
	}
	require.Len(t, cases, len(goldenCases))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata", tc.name)
			m, info, err := Load[float32](dir)
			require.NoError(t, err)
			if tc.cfg.Rope != nil && tc.cfg.Rope.Type == "yarn" {
				assert.InDelta(t, tc.cfg.Rope.AttentionFactor, m.Config.Rope.AttentionFactor, 1e-15)
				tc.cfg.Rope.AttentionFactor = m.Config.Rope.AttentionFactor
			}
			assert.Equal(t, tc.cfg, m.Config)
			want := tc.info
			want.Dir, want.Name = dir, tc.name
			want.WeightFiles = []string{WeightsFile}
			want.WeightDTypes = []safetensors.DType{map[string]safetensors.DType{"qwen3-bf16-sharded": safetensors.BF16, "mistral-f16": safetensors.F16}[tc.name]}
			if want.WeightDTypes[0] == "" {
				want.WeightDTypes[0] = safetensors.F32
			}
			if tc.name == "qwen3-bf16-sharded" {
				want.WeightFiles = []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
			}
			assert.Equal(t, &want, info)
			assert.Equal(t, tc.cfg.Params(), m.NumParams())
		})
	}
}
