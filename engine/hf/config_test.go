package hf

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
)

// The config.json of each target model (values as published on the Hub;
// see ../shared/notes/hf-models.md §1).
const (
	smolLM2Config = `{"architectures":["LlamaForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":0,"eos_token_id":0,"hidden_act":"silu","hidden_size":576,"initializer_range":0.041666666666666664,"intermediate_size":1536,"is_llama_config":true,"max_position_embeddings":8192,"model_type":"llama","num_attention_heads":9,"num_hidden_layers":30,"num_key_value_heads":3,"pretraining_tp":1,"rms_norm_eps":1e-05,"rope_interleaved":false,"rope_scaling":null,"rope_theta":100000,"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.40.1","use_cache":true,"vocab_size":49152}`
	qwen25Config  = `{"architectures":["Qwen2ForCausalLM"],"attention_dropout":0.0,"bos_token_id":151643,"eos_token_id":151643,"hidden_act":"silu","hidden_size":896,"initializer_range":0.02,"intermediate_size":4864,"max_position_embeddings":32768,"max_window_layers":24,"model_type":"qwen2","num_attention_heads":14,"num_hidden_layers":24,"num_key_value_heads":2,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"sliding_window":32768,"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.40.1","use_cache":true,"use_sliding_window":false,"vocab_size":151936}`
	qwen3Config   = `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":151643,"eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":1024,"initializer_range":0.02,"intermediate_size":3072,"max_position_embeddings":40960,"max_window_layers":28,"model_type":"qwen3","num_attention_heads":16,"num_hidden_layers":28,"num_key_value_heads":8,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,"sliding_window":null,"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.51.0","use_cache":true,"use_sliding_window":false,"vocab_size":151936}`
	llama32Config = `{"architectures":["LlamaForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":128000,"eos_token_id":128001,"head_dim":64,"hidden_act":"silu","hidden_size":2048,"initializer_range":0.02,"intermediate_size":8192,"max_position_embeddings":131072,"mlp_bias":false,"model_type":"llama","num_attention_heads":32,"num_hidden_layers":16,"num_key_value_heads":8,"pretraining_tp":1,"rms_norm_eps":1e-05,"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},"rope_theta":500000.0,"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.45.0.dev0","use_cache":true,"vocab_size":128256}`
	mistralConfig = `{"architectures":["MistralForCausalLM"],"bos_token_id":1,"eos_token_id":2,"hidden_act":"silu","hidden_size":4096,"initializer_range":0.02,"intermediate_size":14336,"max_position_embeddings":32768,"model_type":"mistral","num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,"rms_norm_eps":1e-05,"rope_theta":10000.0,"sliding_window":4096,"tie_word_embeddings":false,"torch_dtype":"bfloat16","transformers_version":"4.34.0.dev0","use_cache":true,"vocab_size":32000}`
	// Qwen3 in the transformers v5 spelling.
	qwen3V5Config = `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":151643,"dtype":"bfloat16","eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":1024,"initializer_range":0.02,"intermediate_size":3072,"layer_types":["full_attention","full_attention"],"max_position_embeddings":40960,"max_window_layers":28,"model_type":"qwen3","num_attention_heads":16,"num_hidden_layers":2,"num_key_value_heads":8,"rms_norm_eps":1e-06,"rope_parameters":{"rope_theta":1000000,"rope_type":"default"},"sliding_window":null,"tie_word_embeddings":true,"transformers_version":"5.0.0","use_cache":true,"use_sliding_window":false,"vocab_size":151936}`
)

func TestParseTargetConfigs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, json string
		max        int
		want       engine.Config
		maxPos     int
		eos        []int
		window     int
	}{
		{"SmolLM2-135M", smolLM2Config, DefaultMaxContext,
			engine.Config{Vocab: 49152, Dim: 576, Layers: 30, Heads: 9, KVHeads: 3, Hidden: 1536, Context: 8192, RopeTheta: 100000, NormEps: 1e-5, TiedEmbed: true}, 8192, []int{0}, 0},
		{"Qwen2.5-0.5B", qwen25Config, DefaultMaxContext,
			engine.Config{Vocab: 151936, Dim: 896, Layers: 24, Heads: 14, KVHeads: 2, Hidden: 4864, Context: 32768, RopeTheta: 1e6, NormEps: 1e-6, QKVBias: true, TiedEmbed: true}, 32768, []int{151643}, 0},
		{"Qwen3-0.6B", qwen3Config, DefaultMaxContext,
			engine.Config{Vocab: 151936, Dim: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, Hidden: 3072, Context: 32768, RopeTheta: 1e6, NormEps: 1e-6, QKNorm: true, TiedEmbed: true}, 40960, []int{151645}, 0},
		{"Llama-3.2-1B", llama32Config, DefaultMaxContext,
			engine.Config{Vocab: 128256, Dim: 2048, Layers: 16, Heads: 32, KVHeads: 8, Hidden: 8192, Context: 32768, RopeTheta: 500000, NormEps: 1e-5, TiedEmbed: true,
				Rope: &engine.RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192}}, 131072, []int{128001}, 0},
		{"Mistral-7B-v0.1 at 4096", mistralConfig, 4096,
			engine.Config{Vocab: 32000, Dim: 4096, Layers: 32, Heads: 32, KVHeads: 8, Hidden: 14336, Context: 4096, RopeTheta: 10000, NormEps: 1e-5}, 32768, []int{2}, 4096},
		{"Qwen3 v5 spelling", qwen3V5Config, 1024,
			engine.Config{Vocab: 151936, Dim: 1024, Layers: 2, Heads: 16, KVHeads: 8, HeadDim: 128, Hidden: 3072, Context: 1024, RopeTheta: 1e6, NormEps: 1e-6, QKNorm: true, TiedEmbed: true}, 40960, []int{151645}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mc, err := parseConfig("config.json", []byte(tc.json), tc.max)
			require.NoError(t, err)
			assert.Equal(t, tc.want, mc.cfg)
			assert.Equal(t, tc.maxPos, mc.maxPos)
			assert.Equal(t, tc.eos, mc.eos)
			assert.Equal(t, tc.window, mc.slidingWindow)
			assert.Equal(t, "bfloat16", mc.dtype)
		})
	}
}

// edit returns base with the top-level fields of patch set (a null value
// deletes the field).
func edit(t testing.TB, base, patch string) []byte {
	t.Helper()
	var m, p map[string]any
	require.NoError(t, json.Unmarshal([]byte(base), &m))
	require.NoError(t, json.Unmarshal([]byte(patch), &p))
	for k, v := range p {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

func TestParseConfigRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, base, patch string
		max               int
		want              []string // substrings of the error
	}{
		{"unknown model_type", qwen3Config, `{"model_type":"gemma3"}`, 0, []string{`"model_type" = "gemma3"`, "want one of llama, mistral, qwen2, qwen3"}},
		{"no model_type", qwen3Config, `{"model_type":null}`, 0, []string{`"model_type"`, "unsupported model type"}},
		{"architecture mismatch", qwen3Config, `{"architectures":["Qwen2ForCausalLM"]}`, 0, []string{`"architectures"`, `wants ["Qwen3ForCausalLM"]`}},
		{"mlp_bias", llama32Config, `{"mlp_bias":true}`, 0, []string{`"mlp_bias" = true`, "MLP biases are not supported"}},
		{"gelu", llama32Config, `{"hidden_act":"gelu"}`, 0, []string{`"hidden_act" = "gelu"`, "only silu"}},
		{"dynamic rope", llama32Config, `{"rope_scaling":{"rope_type":"dynamic","factor":2.0}}`, 0, []string{`"rope_scaling.rope_type" = "dynamic"`, "want one of default, linear, llama3, yarn"}},
		{"longrope", llama32Config, `{"rope_scaling":{"type":"longrope","short_factor":[1],"long_factor":[1]}}`, 0, []string{`"rope_scaling.rope_type" = "longrope"`}},
		{"llama3 missing field", llama32Config, `{"rope_scaling":{"rope_type":"llama3","factor":8.0}}`, 0, []string{`rope_scaling.low_freq_factor`, "requires it"}},
		{"llama3 high ≤ low", llama32Config, `{"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":4.0,"high_freq_factor":1.0,"original_max_position_embeddings":8192}}`, 0, []string{"high_freq_factor", "must exceed"}},
		{"rope extra key", llama32Config, `{"rope_scaling":{"rope_type":"linear","factor":2.0,"beta_fast":3}}`, 0, []string{"rope_scaling.beta_fast", "not a parameter"}},
		{"rope type clash", llama32Config, `{"rope_scaling":{"rope_type":"linear","type":"yarn","factor":2.0}}`, 0, []string{"rope_scaling.type", "contradicts"}},
		{"yarn ambiguous", qwen3Config, `{"rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}}`, 0, []string{"original_max_position_embeddings", "versions disagree"}},
		{"yarn mscale", qwen3Config, `{"rope_scaling":{"rope_type":"yarn","factor":4.0,"mscale":1.0}}`, 0, []string{"rope_scaling.mscale"}},
		{"yarn factor < 1", qwen3Config, `{"rope_scaling":{"rope_type":"yarn","factor":0.5}}`, 0, []string{"rope_scaling.factor", "≥ 1"}},
		{"rope_parameters vs rope_theta", qwen3V5Config, `{"rope_theta":10000}`, 0, []string{"rope_parameters.rope_theta", "contradicts rope_theta"}},
		{"nested rope_parameters", qwen3V5Config, `{"rope_parameters":{"full_attention":{"rope_theta":1e6}}}`, 0, []string{"per-layer-type"}},
		{"dtype clash", qwen3V5Config, `{"torch_dtype":"float32"}`, 0, []string{`"dtype" = "bfloat16"`, "contradicts torch_dtype"}},
		{"bad dtype", qwen3Config, `{"torch_dtype":"int8"}`, 0, []string{`"torch_dtype" = "int8"`, "want one of"}},
		{"moe", qwen3Config, `{"num_experts":128,"num_experts_per_tok":8}`, 0, []string{"num_experts", "mixture-of-experts"}},
		{"vision", qwen25Config, `{"vision_config":{"depth":32}}`, 0, []string{"vision_config", "vision-language"}},
		{"quantized", qwen25Config, `{"quantization_config":{"quant_method":"awq"}}`, 0, []string{"quantization_config"}},
		{"mrope", qwen25Config, `{"use_mrope":true}`, 0, []string{"use_mrope", "multimodal RoPE"}},
		{"interleaved rope", smolLM2Config, `{"rope_interleaved":true}`, 0, []string{"rope_interleaved", "rotate-half"}},
		{"unknown field", qwen3Config, `{"fancy_new_thing":1}`, 0, []string{`"fancy_new_thing" = 1`, "unknown field"}},
		{"missing hidden_size", qwen3Config, `{"hidden_size":null}`, 0, []string{`"hidden_size"`, "required"}},
		{"float layers", qwen3Config, `{"num_hidden_layers":2.5}`, 0, []string{`"num_hidden_layers" = 2.5`, "want an integer"}},
		{"string heads", qwen3Config, `{"num_attention_heads":"16"}`, 0, []string{"num_attention_heads", "want an integer"}},
		{"kv heads do not divide", qwen3Config, `{"num_key_value_heads":5}`, 0, []string{"num_key_value_heads", "must divide"}},
		{"odd head_dim", qwen3Config, `{"head_dim":7}`, 0, []string{`"head_dim" = 7`, "even"}},
		{"dropout", qwen3Config, `{"attention_dropout":0.1}`, 0, []string{"attention_dropout", "no dropout"}},
		{"partial rotary", qwen3Config, `{"partial_rotary_factor":0.5}`, 0, []string{"partial_rotary_factor"}},
		{"qwen2 attention_bias", qwen25Config, `{"attention_bias":true}`, 0, []string{"attention_bias", "qwen2 always"}},
		{"mistral window < context", mistralConfig, `{}`, 8192, []string{`"sliding_window" = 4096`, "WithMaxContext(4096)"}},
		{"mistral window default cap", mistralConfig, `{}`, 0, []string{`"sliding_window" = 4096`, "context (32768)"}},
		{"qwen window in use", qwen25Config, `{"use_sliding_window":true,"sliding_window":4096,"max_window_layers":0}`, 0, []string{"sliding_window", "no sliding-window attention"}},
		{"sliding on llama", llama32Config, `{"sliding_window":4096}`, 0, []string{"sliding_window", "has no sliding window"}},
		{"layer_types length", qwen3V5Config, `{"layer_types":["full_attention"]}`, 0, []string{"layer_types", "2 entries"}},
		{"layer_types value", qwen3V5Config, `{"layer_types":["full_attention","chunked"]}`, 0, []string{"layer_types[1]", "sliding_attention"}},
		{"context over engine limit", llama32Config, `{}`, 1 << 17, []string{"context 131072"}},
		{"eos list of strings", qwen3Config, `{"eos_token_id":["a"]}`, 0, []string{"eos_token_id", "list of integers"}},
		{"not an object", `[]`, `{}`, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			max := tc.max
			if max == 0 {
				max = DefaultMaxContext
			}
			data := []byte(tc.base)
			if tc.base != `[]` {
				data = edit(t, tc.base, tc.patch)
			}
			_, err := parseConfig("dir/config.json", data, max)
			require.Error(t, err)
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), "dir/config.json")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseConfigAccepts(t *testing.T) {
	t.Parallel()
	// The largest sane context; window equal to the context; yarn with
	// factor = max/original; older "type" spelling; ints as floats.
	for _, tc := range []struct{ name, base, patch string }{
		{"mistral window = context", mistralConfig, `{"max_position_embeddings":4096}`},
		{"mistral null window", mistralConfig, `{"sliding_window":null}`},
		{"qwen3 yarn", qwen3Config, `{"max_position_embeddings":131072,"rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}}`},
		{"old type key", llama32Config, `{"rope_scaling":{"type":"linear","factor":2.0}}`},
		{"default rope_scaling", llama32Config, `{"rope_scaling":{"rope_type":"default"}}`},
		{"integral floats", qwen3Config, `{"num_hidden_layers":28.0,"vocab_size":1.5e5}`},
		{"moe fields off", qwen3Config, `{"num_experts":0,"mlp_only_layers":[]}`},
		{"both spellings agree", qwen3V5Config, `{"rope_theta":1000000,"torch_dtype":"bfloat16","rope_scaling":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig("config.json", edit(t, tc.base, tc.patch), DefaultMaxContext)
			assert.NoError(t, err)
		})
	}
	mc, err := parseConfig("config.json", edit(t, qwen3Config, `{"max_position_embeddings":131072,"rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}}`), DefaultMaxContext)
	require.NoError(t, err)
	assert.Equal(t, &engine.RopeScaling{Type: "yarn", Factor: 4, OriginalContext: 32768, AttentionFactor: mc.cfg.Rope.AttentionFactor, BetaFast: 32, BetaSlow: 1}, mc.cfg.Rope)
	assert.InDelta(t, 1.1386294361119891, mc.cfg.Rope.AttentionFactor, 1e-15)
}
