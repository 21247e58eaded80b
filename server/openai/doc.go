// Package openai serves an OpenAI-compatible, vLLM-flavoured HTTP surface
// over tandem samplers: POST /v1/completions (text or token-id prompts,
// n, logprobs, echo, return_token_ids, seed, stop, stop_token_ids),
// POST /v1/chat/completions (through a chat renderer), GET /v1/models,
// POST /v1/load_lora_adapter and /v1/unload_lora_adapter (PEFT folders),
// POST /tokenize and /detokenize.
//
// Field names, JSON shapes, status codes and error messages follow vLLM's
// OpenAI server (vllm/entrypoints/openai/completion/protocol.py,
// chat_completion/protocol.py, engine/protocol.py, models/serving.py and
// serve/tokenize/protocol.py; see testdata/README.md for the commits), so
// any OpenAI client, and a client written for vLLM's runtime LoRA
// endpoints, works against it. As in vLLM, fields the handler does not
// know are ignored; fields it knows but cannot honour (beam search,
// penalties, logit_bias, ...) are refused with a 400 that names the field.
//
// "stream": true answers with vLLM's server-sent events: one chunk per
// token of each choice (the choices interleaved), carrying the text the
// token adds, its log-probs and, with return_token_ids, its id; the
// choice's last chunk carries finish_reason; stream_options.include_usage
// adds a last chunk with the usage, continuous_usage_stats the usage so
// far on every chunk; then "data: [DONE]". Joined, the chunks are the
// unstreamed response of the same request and seed. The samplers return
// whole sequences, so the events are sent when the call's sampling ends:
// the stream has vLLM's shape, not its time to first token.
//
// Log-probs have tandem's semantics, which are vLLM's
// --logprobs-mode processed_logprobs: the log-probability of each sampled
// token under the distribution it was drawn from (after temperature,
// top-k and top-p). The alternatives listed in top_logprobs (logprobs > 0)
// are the model's own log-softmax at that position.
//
// Handler is safe for concurrent use. It bounds request bodies and the
// requests in flight (beyond the bound it answers 429).
package openai
