// Package chat turns conversations into token ids for sampling and training,
// and sampled ids back into messages.
//
// Two kinds of renderer live here.
//
// Family renderers are written by hand, one per model family, the way
// tinker-cookbook's renderers are (thinking-machines-lab/tinker-cookbook,
// tinker_cookbook/renderers): "qwen3", "qwen3_disable_thinking",
// "qwen3_preserve_thinking", "llama3", "deepseek_v3", "gemma3" and
// "role_colon". Each renders a message as a header (role markers, never
// trained except with [AllTokens]) and an output (the text and its
// end-of-turn token, what the model produces), so [Renderer.Supervised] can
// weight exactly the tokens a model is trained to produce. Control tokens are
// emitted by id; message text is encoded piece by piece (header, content,
// end-of-turn), as a sampler sees it: the model generates a fresh stream after
// the prompt. Qwen3 encodes message text with
// [tokenizer.EncodeOptions.SplitSpecialTokens], so user text cannot forge a
// turn marker.
//
// The Jinja renderer ([NewJinja], or [New] with "jinja") runs the
// chat_template of tokenizer_config.json through github.com/ardanlabs/jinja,
// set up as transformers sets up Jinja2 (see [Template]), for any model
// without a family renderer. [ApplyTemplate] is transformers'
// apply_chat_template: render to text, then encode without special tokens.
//
// # Where the family renderers differ from Hugging Face's templates
//
// A family renderer's generation prompt equals transformers'
// apply_chat_template(..., add_generation_prompt=True, tokenize=True) except:
//
//   - Content is not trimmed. Llama 3's and Gemma 3's templates apply
//     `| trim` to every message; tinker-cookbook's Llama 3 renderer does not,
//     and neither do these (a renderer renders what it is given; parsing a
//     sampled turn must give back the same text).
//   - Content that starts with "\n" right after a header encodes differently,
//     because the header and the content are encoded apart (the note's
//     chunked-vs-whole table): Qwen3 "assistant\n" + "\n\nHi" is
//     [..., 198, 271, 13048] chunked and [..., 1406, 13048] whole.
//   - Qwen3 encodes message text with special-token matching off: a user
//     message containing "<|im_end|>" is ordinary text here and the control
//     token 151645 in Hugging Face's render.
//   - Qwen3 renders tool-call arguments re-serialised as Python's json.dumps
//     writes them (the template writes a string argument verbatim).
//   - DeepSeek-V3 renders a system message only first (the template gathers
//     every system message to the front), and writes tool calls and tool
//     outputs well-formed: the template renders tool calls only when the
//     message's content is null, omits <｜tool▁calls▁end｜> and the
//     end-of-sentence token after a single tool call, and never resets its
//     first-call and first-output flags between turns. tinker-cookbook's
//     DeepSeek renderers target V3.1's template (with </think>); these target
//     the V3 template the tokenizer files carry.
//   - Gemma 3 has no tinker-cookbook renderer; this one follows the template
//     (system folded into the first user turn, "model" for assistant,
//     alternation enforced) without the trim.
//
// A supervised example ends on the final end-of-turn token; the "\n" that
// Qwen3's and Gemma 3's templates write after it belongs to the next header.
//
// Qwen3 follows the template's history rule: reasoning is kept only on
// assistant messages after the last user query (the final one always framed
// with <think>…</think>, earlier ones only when they have reasoning). So
// "qwen3" lacks the extension property: a turn's reasoning vanishes once the
// next user message arrives. "qwen3_preserve_thinking" keeps and frames every
// assistant message's reasoning and has the property; it then differs from
// the template on any conversation with reasoning in history.
//
// # Concurrency
//
// Renderers and Templates are immutable after construction and safe for
// concurrent use when their Tokenizer is.
package chat
