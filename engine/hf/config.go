package hf

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/tandemrl/tandem/engine"
)

// family holds what differs between the supported model types: the
// architecture name and the defaults transformers' config classes use for
// absent fields.
type family struct {
	arch       string
	eps        float64 // rms_norm_eps default
	maxPos     int     // max_position_embeddings default
	headDim    int     // head_dim default (0: hidden_size/num_attention_heads)
	windowKeys bool    // sliding_window / use_sliding_window / max_window_layers are read
}

var families = map[string]family{
	"llama":   {arch: "LlamaForCausalLM", eps: 1e-6, maxPos: 2048},
	"qwen2":   {arch: "Qwen2ForCausalLM", eps: 1e-6, maxPos: 32768, windowKeys: true},
	"qwen3":   {arch: "Qwen3ForCausalLM", eps: 1e-6, maxPos: 32768, headDim: 128, windowKeys: true},
	"mistral": {arch: "MistralForCausalLM", eps: 1e-6, maxPos: 4096 * 32, windowKeys: true},
}

// ignoredFields are config.json keys that do not change the forward pass
// (bookkeeping, training-time or generation settings); they are accepted
// with any value. Every other key the loader does not read is an error.
var ignoredFields = []string{
	"_name_or_path", "transformers_version", "initializer_range", "use_cache",
	"pretraining_tp", // only a slicing of the matmuls, same result
	"pad_token_id", "is_llama_config", "torchscript", "return_dict",
	"output_attentions", "output_hidden_states", "chunk_size_feed_forward",
	"id2label", "label2id", "problem_type", "tokenizer_class", "prefix",
	"finetuning_task", "task_specific_params", "use_bfloat16", "_attn_implementation_autoset",
	"max_length", "temperature", "top_p", "top_k", "do_sample", // generation defaults some configs carry
}

// rejectedFields name features the engine does not have: present with a
// truthy value (not null, false, 0 or empty), each is an error.
var rejectedFields = map[string]string{
	"num_experts":                     "mixture-of-experts models are not supported",
	"num_local_experts":               "mixture-of-experts models are not supported",
	"num_experts_per_tok":             "mixture-of-experts models are not supported",
	"moe_intermediate_size":           "mixture-of-experts models are not supported",
	"shared_expert_intermediate_size": "mixture-of-experts models are not supported",
	"decoder_sparse_step":             "mixture-of-experts models are not supported",
	"router_aux_loss_coef":            "mixture-of-experts models are not supported",
	"output_router_logits":            "mixture-of-experts models are not supported",
	"mlp_only_layers":                 "mixture-of-experts models are not supported",
	"norm_topk_prob":                  "mixture-of-experts models are not supported",
	"vision_config":                   "vision-language models are not supported",
	"text_config":                     "multimodal wrapper configs are not supported; point at a text-only model",
	"image_token_id":                  "vision-language models are not supported",
	"image_token_index":               "vision-language models are not supported",
	"video_token_id":                  "vision-language models are not supported",
	"vision_start_token_id":           "vision-language models are not supported",
	"use_mrope":                       "multimodal RoPE is not supported",
	"quantization_config":             "quantized checkpoints are not supported; use BF16, F16 or F32 weights",
	"auto_map":                        "models with custom code are not supported",
	"rope_interleaved":                "interleaved RoPE is not supported (Hugging Face checkpoints use rotate-half)",
}

// modelConfig is config.json resolved for the engine.
type modelConfig struct {
	cfg           engine.Config
	modelType     string
	arch          string
	name          string
	bos           int
	eos           []int
	maxPos        int
	dtype         string
	slidingWindow int
}

// parseConfig reads config.json (file names it in errors), capping the
// engine context at maxContext.
func parseConfig(file string, data []byte, maxContext int) (*modelConfig, error) {
	f, err := decodeObject(file, data)
	if err != nil {
		return nil, err
	}
	mt, err := f.str("model_type", "")
	if err != nil {
		return nil, err
	}
	fam, ok := families[mt]
	if !ok {
		v := any(mt)
		if mt == "" {
			v = nil
		}
		return nil, f.errf("model_type", v, "unsupported model type; want one of %s", oneOf("llama", "mistral", "qwen2", "qwen3"))
	}
	mc := &modelConfig{modelType: mt, arch: fam.arch, bos: -1}
	if a := f.raw("architectures"); a != nil {
		list, ok := a.([]any)
		if !ok || len(list) != 1 || list[0] != fam.arch {
			return nil, f.errf("architectures", a, "model_type %q wants [%q]", mt, fam.arch)
		}
	}
	if mc.name, err = f.str("_name_or_path", ""); err != nil {
		return nil, err
	}
	rejected := make([]string, 0, len(rejectedFields))
	for k := range rejectedFields {
		rejected = append(rejected, k)
	}
	sort.Strings(rejected)
	for _, k := range rejected {
		why := rejectedFields[k]
		if v, ok := f.m[k]; ok {
			f.used[k] = true
			if truthy(v) {
				return nil, f.errf(k, v, "%s", why)
			}
		}
	}
	c := &mc.cfg
	ints := []struct {
		key string
		dst *int
	}{
		{"vocab_size", &c.Vocab}, {"hidden_size", &c.Dim}, {"num_hidden_layers", &c.Layers},
		{"num_attention_heads", &c.Heads}, {"intermediate_size", &c.Hidden},
	}
	for _, x := range ints {
		if *x.dst, err = f.required(x.key); err != nil {
			return nil, err
		}
		if *x.dst < 1 {
			return nil, f.errf(x.key, f.m[x.key], "must be ≥ 1")
		}
	}
	if c.KVHeads, err = f.integer("num_key_value_heads", c.Heads); err != nil {
		return nil, err
	}
	if c.KVHeads < 1 || c.Heads%c.KVHeads != 0 {
		return nil, f.errf("num_key_value_heads", f.m["num_key_value_heads"], "must divide num_attention_heads (%d)", c.Heads)
	}
	if c.KVHeads == c.Heads {
		c.KVHeads = 0 // the engine's spelling of "one KV head per query head"
	}
	hd := fam.headDim
	if hd == 0 {
		hd = c.Dim / c.Heads
		if c.Dim%c.Heads != 0 && !f.present("head_dim") {
			return nil, f.errf("num_attention_heads", f.m["num_attention_heads"], "must divide hidden_size (%d) when head_dim is not given", c.Dim)
		}
	}
	if hd, err = f.integer("head_dim", hd); err != nil {
		return nil, err
	}
	if hd < 2 || hd%2 != 0 {
		return nil, f.errf("head_dim", f.m["head_dim"], "must be even and ≥ 2 (rotary positions)")
	}
	if hd*c.Heads != c.Dim || c.Dim%c.Heads != 0 {
		c.HeadDim = hd
	}
	act, err := f.str("hidden_act", "silu")
	if err != nil {
		return nil, err
	}
	if act != "silu" {
		return nil, f.errf("hidden_act", act, "only silu (SwiGLU) is supported")
	}
	if c.NormEps, err = f.number("rms_norm_eps", fam.eps); err != nil {
		return nil, err
	}
	if c.NormEps <= 0 {
		return nil, f.errf("rms_norm_eps", f.m["rms_norm_eps"], "must be > 0")
	}
	if mc.maxPos, err = f.integer("max_position_embeddings", fam.maxPos); err != nil {
		return nil, err
	}
	if mc.maxPos < 1 {
		return nil, f.errf("max_position_embeddings", f.m["max_position_embeddings"], "must be ≥ 1")
	}
	c.Context = min(mc.maxPos, maxContext)
	if c.TiedEmbed, err = f.boolean("tie_word_embeddings", false); err != nil {
		return nil, err
	}
	if err := parseBias(f, mt, c); err != nil {
		return nil, err
	}
	if drop, err := f.number("attention_dropout", 0); err != nil {
		return nil, err
	} else if drop != 0 {
		return nil, f.errf("attention_dropout", f.m["attention_dropout"], "must be 0; the engine has no dropout")
	}
	if prf, err := f.number("partial_rotary_factor", 1); err != nil {
		return nil, err
	} else if prf != 1 {
		return nil, f.errf("partial_rotary_factor", f.m["partial_rotary_factor"], "must be 1; partial rotary embeddings are not supported")
	}
	if err := parseRope(f, mc); err != nil {
		return nil, err
	}
	if err := parseDType(f, mc); err != nil {
		return nil, err
	}
	if err := parseWindow(f, fam, mc); err != nil {
		return nil, err
	}
	if mc.bos, err = f.integer("bos_token_id", -1); err != nil {
		return nil, err
	}
	if mc.eos, err = f.intSet("eos_token_id"); err != nil {
		return nil, err
	}
	for _, k := range ignoredFields {
		f.used[k] = true
	}
	if extra := f.unread(); len(extra) > 0 {
		return nil, f.errf(extra[0], f.m[extra[0]], "unknown field for model_type %q; the loader reads only the fields it understands and a short list it knows to be harmless", mt)
	}
	if err := c.Validate(); err != nil {
		return nil, &ConfigError{File: file, Msg: err.Error()}
	}
	return mc, nil
}

// parseBias maps attention_bias and mlp_bias per family.
func parseBias(f *fields, mt string, c *engine.Config) error {
	ab, err := f.boolean("attention_bias", false)
	if err != nil {
		return err
	}
	mb, err := f.boolean("mlp_bias", false)
	if err != nil {
		return err
	}
	if mb {
		return f.errf("mlp_bias", true, "MLP biases are not supported; want false")
	}
	switch mt {
	case "llama", "qwen3":
		c.QKVBias, c.OBias = ab, ab
	case "qwen2":
		if ab {
			return f.errf("attention_bias", true, "qwen2 always has q/k/v biases and no o_proj bias; want false or absent")
		}
		c.QKVBias = true
	case "mistral":
		if ab {
			return f.errf("attention_bias", true, "mistral has no attention biases; want false or absent")
		}
	}
	if mt == "qwen3" {
		c.QKNorm = true
	}
	return nil
}

// parseDType reads torch_dtype (older) or dtype (transformers v5).
func parseDType(f *fields, mc *modelConfig) error {
	a, err := f.str("torch_dtype", "")
	if err != nil {
		return err
	}
	b, err := f.str("dtype", "")
	if err != nil {
		return err
	}
	if a != "" && b != "" && a != b {
		return f.errf("dtype", b, "contradicts torch_dtype %q", a)
	}
	mc.dtype = a + b
	if a != "" && b != "" {
		mc.dtype = a
	}
	switch mc.dtype {
	case "", "float32", "float16", "bfloat16", "float64":
		return nil
	}
	k := "torch_dtype"
	if a == "" {
		k = "dtype"
	}
	return f.errf(k, mc.dtype, "want one of %s", oneOf("bfloat16", "float16", "float32", "float64"))
}

// parseWindow reads sliding_window, use_sliding_window, max_window_layers
// and layer_types. The engine has no sliding-window attention, so a window
// that is in effect must be no shorter than the engine context (then it
// changes nothing).
func parseWindow(f *fields, fam family, mc *modelConfig) error {
	layers := mc.cfg.Layers
	var sliding []bool // per layer: a window applies
	if lt := f.raw("layer_types"); lt != nil {
		list, ok := lt.([]any)
		if !ok || len(list) != layers {
			return f.errf("layer_types", lt, "want a list of %d entries (num_hidden_layers)", layers)
		}
		for i, v := range list {
			switch v {
			case "full_attention":
				sliding = append(sliding, false)
			case "sliding_attention":
				sliding = append(sliding, true)
			default:
				return f.errf(fmt.Sprintf("layer_types[%d]", i), v, "want full_attention or sliding_attention")
			}
		}
	}
	if !fam.windowKeys {
		for _, k := range []string{"sliding_window", "use_sliding_window", "max_window_layers"} {
			if v := f.raw(k); truthy(v) {
				return f.errf(k, v, "model_type %q has no sliding window", mc.modelType)
			}
		}
		if slices.Contains(sliding, true) {
			return f.errf("layer_types", f.m["layer_types"], "model_type %q has no sliding window", mc.modelType)
		}
		return nil
	}
	w, err := f.integer("sliding_window", 0)
	if err != nil {
		return err
	}
	if w < 0 {
		return f.errf("sliding_window", f.m["sliding_window"], "must be ≥ 1 or null")
	}
	active := w > 0
	if mc.modelType != "mistral" {
		use, err := f.boolean("use_sliding_window", false)
		if err != nil {
			return err
		}
		active = active && use
		mwl, err := f.integer("max_window_layers", 28)
		if err != nil {
			return err
		}
		if sliding == nil {
			for i := range layers {
				sliding = append(sliding, i >= mwl)
			}
		}
	} else {
		// Mistral applies sliding_window whenever it is set.
		if _, err := f.boolean("use_sliding_window", true); err != nil {
			return err
		}
		f.used["max_window_layers"] = true
		if sliding == nil {
			sliding = make([]bool, layers)
			for i := range sliding {
				sliding[i] = true
			}
		}
	}
	if !active || !slices.Contains(sliding, true) {
		return nil
	}
	if mc.cfg.Context > w {
		return f.errf("sliding_window", w,
			"the engine has no sliding-window attention, so the context (%d) must not exceed the window; load with hf.WithMaxContext(%d) or less", mc.cfg.Context, w)
	}
	mc.slidingWindow = w
	return nil
}

// parseGeneration reads generation_config.json for its BOS and EOS ids.
func parseGeneration(file string, data []byte) (bos int, eos []int, err error) {
	f, err := decodeObject(file, data)
	if err != nil {
		return 0, nil, err
	}
	if bos, err = f.integer("bos_token_id", -1); err != nil {
		return 0, nil, err
	}
	if eos, err = f.intSet("eos_token_id"); err != nil {
		return 0, nil, err
	}
	return bos, eos, nil
}

// unionIDs merges id sets, sorted, without duplicates.
func unionIDs(sets ...[]int) []int {
	var out []int
	for _, s := range sets {
		out = append(out, s...)
	}
	sort.Ints(out)
	return slices.Compact(out)
}

// marshal is json.MarshalIndent with the package's layout.
func marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
