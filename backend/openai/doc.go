// Package openai is an rl.Sampler over an OpenAI-compatible inference
// engine that loads LoRA adapters at run time: vLLM (dialect VLLM) or
// SGLang (dialect SGLang). A tandem loop keeps its trainer and points its
// sampler at engines users already run.
//
// Requests carry the prompt as token ids and every sampling parameter
// explicitly, so no server default (generation_config.json, vLLM's
// max_tokens 16) leaks in: vLLM's /v1/completions with prompt [ids], n,
// seed, logprobs 0, return_token_ids, ignore_eos, include_stop_str_in_output
// and skip_special_tokens false; SGLang's /generate with input_ids (one
// input per sample, seeds seed+i), return_logprob and lora_path. Tokens and
// their log-probs come back aligned and are checked to be.
//
// Versions. Each loaded policy version is registered under its own adapter
// name (DefaultAdapterName: "<run>-v000017"), never reloaded in place (vLLM's
// load_inplace is buggy, see the notes). Sample uses the newest version
// loaded when it starts, and its SampleOutput carries exactly that version;
// before any Load it samples the base model as version 0. At most
// Options.MaxLoadedVersions versions stay registered; older ones are
// unloaded, oldest first, once no Sample in flight uses them.
//
// Log-probs. tandem's losses need the log-prob of each token under the
// distribution it was drawn from (after temperature, top-k and top-p). vLLM
// returns that only with --logprobs-mode processed_logprobs; New probes it
// (a top_k 1 draw must have log-prob 0) and refuses a server that returns raw
// log-probs, naming the flag.
//
// Server set-up for vLLM: --enable-lora --max-loras ≥ MaxLoadedVersions
// --max-cpu-loras ≥ MaxLoadedVersions+1 --max-lora-rank ≥ r
// --logprobs-mode processed_logprobs and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True.
// Adapter folders are handed to the server as paths it must be able to read
// (see Options.PathRewrite) and must outlive their registration.
//
// Errors are typed: *StatusError and *ConnError for the transport, and
// sentinels (ErrRuntimeLoRADisabled, ErrAdapterExists, ErrAdapterRank,
// ErrRawLogprobs, …) for the cases a caller acts on.
package openai
