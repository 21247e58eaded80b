package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPEFTExportsLoadInVLLM exports adapters of every model shape the
// engine runs and applies vLLM's loading rules to each: attention and MLP
// adapters at allowed ranks pass; an lm_head adapter or a rank vLLM does
// not allow is caught (the validator is not one that always passes).
func TestPEFTExportsLoadInVLLM(t *testing.T) {
	t.Parallel()
	llama := Config{Vocab: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 48, Context: 32, RopeTheta: 5e5,
		Rope: &RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 16}}
	qwen2 := Config{Vocab: 64, Dim: 32, Layers: 2, Heads: 4, KVHeads: 1, Hidden: 48, Context: 32, QKVBias: true, TiedEmbed: true}
	for name, cfg := range map[string]Config{"tandem": DefaultConfig(), "qwen3": qwenLikeConfig(), "llama": llama, "qwen2": qwen2} {
		for _, c := range []struct {
			lora LoraConfig
			want []string // substrings of the rules broken, in order
		}{
			{LoraConfig{Rank: 8, TrainAttn: true, TrainMLP: true}, nil},
			{LoraConfig{Rank: 16, TrainAttn: true}, nil},
			{LoraConfig{Rank: 1, TrainMLP: true}, nil},
			{LoraConfig{Rank: 8, TrainAttn: true, TrainUnembed: true}, []string{"lm_head.lora_A.weight is unsupported", "lm_head.lora_B.weight is unsupported"}},
			{LoraConfig{Rank: 12, TrainMLP: true}, []string{"r 12 is not a rank vLLM allows"}},
		} {
			ad, err := NewAdapter[float32](cfg, c.lora)
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, SaveAdapter(dir, ad, "org/"+name))
			got := VLLMProblems(dir, cfg)
			require.Len(t, got, len(c.want), "%s %+v: %v", name, c.lora, got)
			for i, w := range c.want {
				assert.Contains(t, got[i], w, "%s %+v", name, c.lora)
			}
		}
	}
}
