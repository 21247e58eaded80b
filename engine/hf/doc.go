// Package hf loads Hugging Face causal-LM model folders into the engine and
// writes engine models back as Hugging Face Llama folders.
//
// [Load] reads config.json (both the older spelling — rope_theta,
// rope_scaling, torch_dtype — and the transformers v5 one — rope_parameters,
// dtype, layer_types), generation_config.json and the safetensors weights
// (one model.safetensors, or shards listed by model.safetensors.index.json;
// BF16, F16, F32 or F64) of the families llama (Llama 3.x, SmolLM2), qwen2
// (Qwen2.5), qwen3 (dense Qwen3) and mistral, into an [engine.Model]. It is
// strict: a field it does not understand, a feature the engine lacks (mixture
// of experts, vision towers, dynamic or longrope RoPE, an active sliding
// window shorter than the context, MLP biases, activations other than
// silu), a missing, misshapen or non-finite tensor, or an extra one is an
// error naming the file, the field or tensor, the value and what is
// accepted (*ConfigError, *WeightError). With [WithStoredMatrices] a
// checkpoint whose matrices are all stored in BF16, or all in F16, keeps
// them in that format as views of the memory-mapped files
// ([engine.Matrices16]); otherwise every weight is converted to T.
//
// Config mapping: num_key_value_heads → KVHeads, head_dim → HeadDim,
// qwen3 → QKNorm, qwen2 → QKVBias, llama/qwen3 attention_bias → QKVBias and
// OBias, tie_word_embeddings → TiedEmbed, rope_scaling linear/llama3/yarn →
// Rope, rms_norm_eps → NormEps (transformers' default 1e-6 when absent),
// max_position_embeddings → Context capped by [WithMaxContext]
// (default [DefaultMaxContext]).
//
// [Save] writes a model as a LlamaForCausalLM folder that Load and
// transformers read back.
package hf
