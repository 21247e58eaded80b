package openai

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tokenizer"
)

// gen is a request's sampling settings, checked.
type gen struct {
	p           rl.SamplingParams // MaxTokens set per prompt
	n           int
	userStops   []int    // stop_token_ids
	stopStrs    []string // stop (and the renderer's stop strings for chat)
	includeStop bool
	skipSpecial bool
	asIDs       bool // return_tokens_as_token_ids
	tokenIDs    bool // return_token_ids
	stream      streaming
}

// unsupported refuses fields tandem knows but cannot honour, naming them.
func unsupported(f *samplingFields) error {
	nonZero := func(p *float64, neutral float64) bool { return p != nil && *p != neutral }
	why := func(field, what string) error {
		return badRequest(field, "%s is not supported by tandem serve; %s", field, what)
	}
	switch {
	case present(f.StreamOptions) && (f.Stream == nil || !*f.Stream):
		return badRequest("stream_options", "Stream options can only be defined when `stream=True`.")
	case f.UseBeamSearch:
		return why("use_beam_search", "sample with n instead")
	case nonZero(f.FrequencyPenalty, 0):
		return why("frequency_penalty", "leave it 0")
	case nonZero(f.PresencePenalty, 0):
		return why("presence_penalty", "leave it 0")
	case nonZero(f.RepetitionPenalty, 1):
		return why("repetition_penalty", "leave it 1")
	case nonZero(f.MinP, 0):
		return why("min_p", "leave it 0; use top_p or top_k")
	case len(f.LogitBias) > 0:
		return why("logit_bias", "leave it empty")
	case f.MinTokens != 0:
		return why("min_tokens", "leave it 0")
	case f.AllowedTokenIDs != nil:
		return why("allowed_token_ids", "leave it out")
	case f.PromptLogprobs != nil:
		return why("prompt_logprobs", "use echo with logprobs for the prompt's log-probs")
	case len(f.ResponseFormat) > 0 && string(f.ResponseFormat) != "null":
		return why("response_format", "structured output is not available")
	case len(f.StructuredOutputs) > 0 && string(f.StructuredOutputs) != "null":
		return why("structured_outputs", "structured output is not available")
	case len(f.LogitsProcessors) > 0 && string(f.LogitsProcessors) != "null":
		return why("logits_processors", "leave it out")
	}
	return nil
}

// newGen checks the shared sampling fields against b and maps them to
// tandem's: temperature 1, top_p 1 and top_k 0 (none) by default, as
// vLLM's defaults without a generation config; EOS ends a sequence unless
// ignore_eos.
func (h *Handler) newGen(f *samplingFields, b *base, prompts int) (gen, error) {
	if err := unsupported(f); err != nil {
		return gen{}, err
	}
	g := gen{n: 1, includeStop: f.IncludeStopStrInOutput, skipSpecial: true, p: rl.SamplingParams{Temperature: 1}}
	if f.N != nil {
		g.n = *f.N
	}
	if g.n < 1 {
		return gen{}, badRequest("n", "n must be at least 1, got %d.", g.n)
	}
	if g.n*prompts > h.opts.MaxN {
		return gen{}, badRequest("n", "n %d times %d prompt(s) exceeds this server's limit of %d sequences per request", g.n, prompts, h.opts.MaxN)
	}
	if t := f.Temperature; t != nil {
		if !(*t >= 0) || math.IsInf(*t, 0) {
			return gen{}, badRequest("temperature", "temperature must be non-negative, got %v.", *t)
		}
		g.p.Temperature = *t
	}
	if t := f.TopP; t != nil {
		if !(*t > 0 && *t <= 1) {
			return gen{}, badRequest("top_p", "top_p must be in (0, 1], got %v.", *t)
		}
		g.p.TopP = *t
	}
	if k := f.TopK; k != nil {
		if *k < -1 {
			return gen{}, badRequest("top_k", "top_k must be 0 (disable), or at least 1, got %d.", *k)
		}
		g.p.TopK = max(*k, 0)
	}
	g.p.Seed = f.Seed
	for i, s := range f.Stop {
		if s == "" {
			return gen{}, badRequest("stop", "stop string %d is empty", i)
		}
	}
	g.stopStrs = slices.Clone([]string(f.Stop))
	for _, id := range f.StopTokenIDs {
		if id < 0 || id >= b.VocabSize {
			return gen{}, badRequest("stop_token_ids", "stop token id %d is out of vocabulary (size %d)", id, b.VocabSize)
		}
	}
	g.userStops = slices.Clone(f.StopTokenIDs)
	g.p.StopTokens = slices.Clone(f.StopTokenIDs)
	if !f.IgnoreEOS {
		g.p.StopTokens = append(g.p.StopTokens, b.eos...)
	}
	if f.SkipSpecialTokens != nil {
		g.skipSpecial = *f.SkipSpecialTokens
	}
	g.asIDs = f.ReturnTokensAsTokenIDs != nil && *f.ReturnTokensAsTokenIDs
	g.tokenIDs = f.ReturnTokenIDs != nil && *f.ReturnTokenIDs
	st, err := newStreaming(f)
	if err != nil {
		return gen{}, err
	}
	g.stream = st
	return g, nil
}

// checkIDs checks a prompt's token ids against the vocabulary.
func checkIDs(ids []int, b *base, field string) error {
	for i, id := range ids {
		if id < 0 || id >= b.VocabSize {
			return badRequest(field, "token id %d at position %d is out of vocabulary (size %d)", id, i, b.VocabSize)
		}
	}
	return nil
}

// maxTokens is the completion length to ask for: want (nil: the rest of
// the context), checked against the context as vLLM checks it.
func maxTokens(b *base, promptLen int, want *int, field string) (int, error) {
	if promptLen >= b.MaxModelLen {
		return 0, badRequest("prompt", "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", b.MaxModelLen, promptLen)
	}
	if want == nil {
		return b.MaxModelLen - promptLen, nil
	}
	if *want < 0 {
		return 0, badRequest(field, "%s must be at least 0, got %d.", field, *want)
	}
	if promptLen+*want > b.MaxModelLen {
		return 0, badRequest(field, "'%s' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
			field, *want, b.MaxModelLen, promptLen, *want, b.MaxModelLen, promptLen)
	}
	return *want, nil
}

// seq is one finished sequence, cut at the first stop string.
type seq struct {
	tokens     []int
	logprobs   []float64
	text       string // the visible text (stop string and stop token per include_stop_str_in_output)
	finish     string // "stop" or "length"
	stopReason any    // the stop string or stop_token_ids id; nil otherwise
}

// finish decodes a sampled sequence. A stop string is found in the decoded
// text (the engine's own check knows only the shipped vocabulary), and the
// sequence is cut after the token that completes it; the text ends before
// the stop string, or after it with include_stop_str_in_output.
func (g *gen) finish(tok *tokenizer.Tokenizer, s rl.Sequence) (seq, error) {
	out := seq{tokens: s.Tokens, logprobs: s.Logprobs, finish: "length"}
	if len(s.Tokens) > 0 && s.StopReason == rl.StopStop && slices.Contains(g.p.StopTokens, s.Tokens[len(s.Tokens)-1]) {
		last := s.Tokens[len(s.Tokens)-1]
		out.finish = "stop"
		if slices.Contains(g.userStops, last) {
			out.stopReason = last
		}
		shown := s.Tokens
		if !g.includeStop {
			shown = s.Tokens[:len(s.Tokens)-1]
		}
		// Search the text before the stop token for a stop string too.
		if cut, ok, err := g.cutAtStop(tok, shown); err != nil {
			return seq{}, err
		} else if ok {
			return g.applyCut(out, cut), nil
		}
		text, err := tok.Decode(shown, g.skipSpecial)
		if err != nil {
			return seq{}, badRequest("", "decoding the completion: %v", err)
		}
		out.text = text
		return out, nil
	}
	cut, ok, err := g.cutAtStop(tok, s.Tokens)
	if err != nil {
		return seq{}, err
	}
	if ok {
		return g.applyCut(out, cut), nil
	}
	if s.StopReason == rl.StopStop {
		out.finish = "stop"
	}
	text, err := tok.Decode(s.Tokens, g.skipSpecial)
	if err != nil {
		return seq{}, badRequest("", "decoding the completion: %v", err)
	}
	out.text = text
	return out, nil
}

// stopCut is where a stop string ends a sequence.
type stopCut struct {
	tokens int    // tokens kept
	text   string // the text before the stop string
	stop   string
}

func (g *gen) applyCut(out seq, c stopCut) seq {
	out.tokens, out.logprobs = out.tokens[:c.tokens], out.logprobs[:c.tokens]
	out.finish, out.stopReason, out.text = "stop", c.stop, c.text
	if g.includeStop {
		out.text += c.stop
	}
	return out
}

// cutAtStop streams toks through the decoder and reports the first stop
// string to appear, with the number of tokens up to the one completing it.
func (g *gen) cutAtStop(tok *tokenizer.Tokenizer, toks []int) (stopCut, bool, error) {
	if len(g.stopStrs) == 0 {
		return stopCut{}, false, nil
	}
	d := tok.NewStreamDecoder(g.skipSpecial)
	var text strings.Builder
	for i, id := range toks {
		piece, err := d.Next(id)
		if err != nil {
			return stopCut{}, false, badRequest("", "decoding the completion: %v", err)
		}
		if i == len(toks)-1 {
			piece += d.Flush()
		}
		if piece == "" {
			continue
		}
		text.WriteString(piece)
		t := text.String()
		best, bestAt := "", -1
		for _, st := range g.stopStrs {
			if at := strings.Index(t, st); at >= 0 && (bestAt < 0 || at < bestAt) {
				best, bestAt = st, at
			}
		}
		if bestAt >= 0 {
			return stopCut{tokens: i + 1, text: t[:bestAt], stop: best}, true, nil
		}
	}
	return stopCut{}, false, nil
}

// tokenText is a token's text in a logprobs entry: its own decoded text
// (special tokens kept), or "token_id:N" with return_tokens_as_token_ids.
func (g *gen) tokenText(tok *tokenizer.Tokenizer, id int) string {
	if g.asIDs {
		return fmt.Sprintf("token_id:%d", id)
	}
	s, err := tok.Decode([]int{id}, false)
	if err != nil {
		return fmt.Sprintf("token_id:%d", id)
	}
	return s
}

// alternatives returns, for each of the completion's tokens, the k most
// likely tokens at its position (the model's log-softmax), by scoring
// prompt+completion once more under the same sampler. Positions the
// context cannot hold get none.
func alternatives(ctx context.Context, s rl.Sampler, b *base, prompt, completion []int, k int) ([][]rl.TokenLogprob, error) {
	if k <= 0 || len(completion) == 0 {
		return make([][]rl.TokenLogprob, len(completion)), nil
	}
	full := append(slices.Clone(prompt), completion...)
	keep := len(completion)
	if len(full)+1 > b.MaxModelLen {
		drop := len(full) + 1 - b.MaxModelLen
		full, keep = full[:len(full)-drop], keep-drop
	}
	out := make([][]rl.TokenLogprob, len(completion))
	if keep <= 0 {
		return out, nil
	}
	res, err := s.Sample(ctx, rl.Tokens(full), 1, rl.SamplingParams{MaxTokens: 1, TopKPromptLogprobs: k})
	if err != nil {
		return nil, err
	}
	for i := range keep {
		if j := len(prompt) + i; j < len(res.TopKPromptLogprobs) {
			out[i] = res.TopKPromptLogprobs[j]
		}
	}
	return out, nil
}
