package hf

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/safetensors"
	"github.com/tandemrl/tandem/internal/atomicfile"
)

// SaveOptions configure [Save]. The zero value writes F32 weights with
// BOS 0 and EOS 1 (tandem's character model: engine.BOS, engine.EOS) and
// no tokenizer.
type SaveOptions struct {
	// DType of the stored weights: F32 (default), BF16, F16 or F64.
	DType safetensors.DType
	// BOS is bos_token_id; EOS the eos_token_id set (nil means
	// [engine.EOS]). NoBOS writes bos_token_id null instead.
	BOS   int
	EOS   []int
	NoBOS bool
	// Name is written as _name_or_path ("" leaves it out).
	Name string
	// TokenizerJSON and TokenizerConfigJSON, when not nil, are written as
	// tokenizer.json and tokenizer_config.json (for tandem's character
	// model: basemodel.TokenizerFiles()).
	TokenizerJSON       []byte
	TokenizerConfigJSON []byte
}

// transformersVersion is the version Save names in the files it writes.
const transformersVersion = "4.51.0"

// Save writes m to dir (created if needed) as a Hugging Face
// LlamaForCausalLM folder: config.json, generation_config.json,
// model.safetensors and, when given, the tokenizer files. Each file is
// written atomically. Only what Llama's modeling code expresses can be
// saved: q/k norms (Qwen3) or a bias on q/k/v without one on o (Qwen2) are
// an error. The weights file is built in memory (its size in bytes).
func Save[T engine.Float](dir string, m *engine.Model[T], o SaveOptions) error {
	m = m.Widen() // a 16-bit model's matrices, exactly
	c := m.Config
	if err := c.Validate(); err != nil {
		return fmt.Errorf("hf: save: %w", err)
	}
	switch {
	case c.QKNorm:
		return fmt.Errorf("hf: save: q/k norms (Qwen3) cannot be written as a Llama model")
	case c.QKVBias != c.OBias:
		return fmt.Errorf("hf: save: Llama's attention_bias puts biases on all of q, k, v and o; this model has qkv_bias %v, o_bias %v", c.QKVBias, c.OBias)
	}
	if r := c.Rope; r != nil && r.Type == "yarn" && r.OriginalContext != 0 && r.OriginalContext != c.Context &&
		float64(c.Context) != float64(r.OriginalContext)*r.Factor {
		return fmt.Errorf("hf: save: yarn original_max_position_embeddings %d with factor %v needs max_position_embeddings %v, but the context is %d",
			r.OriginalContext, r.Factor, float64(r.OriginalContext)*r.Factor, c.Context)
	}
	dtype := o.DType
	if dtype == "" {
		dtype = safetensors.F32
	}
	torch := map[safetensors.DType]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16", safetensors.F64: "float64"}[dtype]
	if torch == "" {
		return fmt.Errorf("hf: save: dtype %q; want F32, BF16, F16 or F64", dtype)
	}
	eos := o.EOS
	if eos == nil {
		eos = []int{engine.EOS}
	}
	var bos any = o.BOS
	if o.NoBOS {
		bos = nil
	}
	var eosJSON any = eos
	if len(eos) == 1 {
		eosJSON = eos[0]
	}
	for _, id := range append([]int{o.BOS}, eos...) {
		if id < 0 || id >= c.Vocab {
			return fmt.Errorf("hf: save: token id %d outside the vocabulary [0, %d)", id, c.Vocab)
		}
	}
	kv := c.KVHeads
	if kv == 0 {
		kv = c.Heads
	}
	hd := c.HeadDim
	if hd == 0 {
		hd = c.Dim / c.Heads
	}
	theta, eps := c.RopeTheta, c.NormEps
	if theta == 0 {
		theta = 10000
	}
	if eps == 0 {
		eps = 1e-5
	}
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"vocab_size": c.Vocab, "hidden_size": c.Dim, "intermediate_size": c.Hidden,
		"num_hidden_layers": c.Layers, "num_attention_heads": c.Heads, "num_key_value_heads": kv,
		"head_dim": hd, "hidden_act": "silu", "max_position_embeddings": c.Context,
		"rms_norm_eps": eps, "rope_theta": theta, "rope_scaling": ropeJSON(c.Rope, c.Context),
		"attention_bias": c.OBias, "attention_dropout": 0.0, "mlp_bias": false,
		"tie_word_embeddings": c.TiedEmbed, "torch_dtype": torch,
		"bos_token_id": bos, "eos_token_id": eosJSON,
		"initializer_range": 0.02, "pretraining_tp": 1, "use_cache": true,
		"transformers_version": transformersVersion,
	}
	if o.Name != "" {
		cfg["_name_or_path"] = o.Name
	}
	gen := map[string]any{"_from_model_config": true, "bos_token_id": bos, "eos_token_id": eosJSON, "transformers_version": transformersVersion}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("hf: save: %w", err)
	}
	var ts []safetensors.Named
	for _, t := range m.Tensors() {
		b, err := safetensors.EncodeFloats(dtype, t.Data)
		if err != nil {
			return fmt.Errorf("hf: save: %s: %w", t.Name, err)
		}
		ts = append(ts, safetensors.Named{Name: t.Name, Tensor: safetensors.Tensor{DType: dtype, Shape: t.Shape, Data: b}})
	}
	if err := safetensors.WriteFile(filepath.Join(dir, WeightsFile), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("hf: save: %w", err)
	}
	files := []struct {
		name string
		v    any
		raw  []byte
	}{{ConfigFile, cfg, nil}, {GenerationConfigFile, gen, nil}, {TokenizerFile, nil, o.TokenizerJSON}, {TokenizerConfigFile, nil, o.TokenizerConfigJSON}}
	for _, f := range files {
		b := f.raw
		if f.v != nil {
			var err error
			if b, err = marshal(f.v); err != nil {
				return fmt.Errorf("hf: save: %s: %w", f.name, err)
			}
		}
		if b == nil {
			continue
		}
		if err := atomicfile.Write(filepath.Join(dir, f.name), b); err != nil {
			return fmt.Errorf("hf: save: %w", err)
		}
	}
	return nil
}

// ropeJSON is rope_scaling as transformers spells it (nil: null).
func ropeJSON(r *engine.RopeScaling, context int) any {
	if r == nil {
		return nil
	}
	out := map[string]any{"rope_type": r.Type, "factor": r.Factor}
	switch r.Type {
	case "llama3":
		out["low_freq_factor"] = r.LowFreqFactor
		out["high_freq_factor"] = r.HighFreqFactor
		out["original_max_position_embeddings"] = r.OriginalContext
	case "yarn":
		for k, v := range map[string]float64{"attention_factor": r.AttentionFactor, "beta_fast": r.BetaFast, "beta_slow": r.BetaSlow} {
			if v != 0 {
				out[k] = v
			}
		}
		// The correction-range length; without the field transformers
		// uses max_position_embeddings (checked by Save).
		if r.OriginalContext != 0 && r.OriginalContext != context {
			out["original_max_position_embeddings"] = r.OriginalContext
		}
	}
	return out
}
