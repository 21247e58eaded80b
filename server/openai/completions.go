package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tokenizer"
)

// defaultMaxTokens is vLLM's CompletionRequest.max_tokens default.
const defaultMaxTokens = 16

func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// decodeCompletion reads and checks a completion request's body.
func decodeCompletion(body []byte) (*CompletionRequest, error) {
	var req CompletionRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if len(req.Prompt.Items) == 0 {
		return nil, badRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	}
	for _, it := range req.Prompt.Items {
		if (it.IsText && it.Text == "") || (!it.IsText && len(it.IDs) == 0) {
			return nil, badRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
		}
	}
	if len(req.PromptEmbeds) > 0 && string(req.PromptEmbeds) != "null" {
		return nil, badRequest("prompt_embeds", "prompt_embeds is not supported by tandem serve; send token ids")
	}
	if req.Suffix != nil && *req.Suffix != "" {
		return nil, badRequest("suffix", "suffix is not supported by tandem serve")
	}
	if req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > MaxLogprobs) {
		return nil, badRequest("logprobs", "`logprobs` must be in [0, %d], got %d.", MaxLogprobs, *req.Logprobs)
	}
	return &req, nil
}

// completions is POST /v1/completions.
func (h *Handler) completions(ctx context.Context, body []byte) (reply, error) {
	req, err := decodeCompletion(body)
	if err != nil {
		return reply{}, err
	}
	t, err := h.resolve(ctx, req.Model)
	if err != nil {
		return reply{}, err
	}
	b := t.base
	// prompt_logprobs is answered here (vLLM's completion field); newGen
	// refuses it elsewhere (chat).
	promptK := req.PromptLogprobs
	req.PromptLogprobs = nil
	if promptK != nil && (*promptK < 0 || *promptK > MaxLogprobs) {
		return reply{}, badRequest("prompt_logprobs", "`prompt_logprobs` must be in [0, %d], got %d.", MaxLogprobs, *promptK)
	}
	g, err := h.newGen(&req.samplingFields, b, len(req.Prompt.Items))
	if err != nil {
		return reply{}, err
	}
	if promptK != nil && g.stream.on {
		return reply{}, badRequest("prompt_logprobs", "`prompt_logprobs` are not available when `stream=True`.")
	}
	var parts []streamPart
	addSpecial := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	prompts := make([][]int, len(req.Prompt.Items))
	for i, it := range req.Prompt.Items {
		if it.IsText {
			prompts[i] = b.Tokenizer.Encode(it.Text, tokenizer.EncodeOptions{AddSpecialTokens: addSpecial})
			if len(prompts[i]) == 0 {
				return reply{}, badRequest("prompt", "prompt %d encodes to no tokens", i)
			}
		} else {
			if err := checkIDs(it.IDs, b, "prompt"); err != nil {
				return reply{}, err
			}
			prompts[i] = it.IDs
		}
	}
	want := req.MaxTokens
	if want == nil {
		d := defaultMaxTokens
		want = &d
	}
	resp := CompletionResponse{ID: newID("cmpl-"), Object: "text_completion", Created: h.opts.Now().Unix(), Model: t.name, Choices: []CompletionChoice{}}
	for i, ids := range prompts {
		mt, err := maxTokens(b, len(ids), want, "max_tokens")
		if err != nil {
			return reply{}, err
		}
		echoOnly := mt == 0
		if echoOnly && !req.Echo {
			return reply{}, badRequest("max_tokens", "max_tokens must be at least 1, got 0.")
		}
		p := g.p
		p.MaxTokens = max(mt, 1)
		p.PromptLogprobs = (req.Echo && req.Logprobs != nil) || promptK != nil
		if promptK != nil {
			p.TopKPromptLogprobs = *promptK
		}
		out, err := t.sampler.Sample(ctx, rl.Tokens(ids), g.n, p)
		if err != nil {
			return reply{}, internal("sampling: %v", err)
		}
		var promptLPJSON json.RawMessage
		if promptK != nil {
			if promptLPJSON, err = promptLogprobsJSON(g, b.Tokenizer, ids, out); err != nil {
				return reply{}, err
			}
		}
		resp.Usage.PromptTokens += len(ids)
		for j, s := range out.Sequences {
			if echoOnly {
				s = rl.Sequence{Tokens: []int{}, Logprobs: []float64{}, StopReason: rl.StopLength}
			}
			ch, err := h.choice(ctx, t, &g, req, ids, out.PromptLogprobs, s)
			if err != nil {
				return reply{}, err
			}
			ch.Index = i*g.n + j
			ch.PromptLogprobs = promptLPJSON
			resp.Usage.CompletionTokens += len(ch.TokenIDs)
			if g.stream.on {
				pieces, err := textDeltas(b.Tokenizer, g.skipSpecial, ch.TokenIDs, ch.Text[ch.echoLen:])
				if err != nil {
					return reply{}, err
				}
				parts = append(parts, streamPart{tokens: ch.TokenIDs, pieces: pieces, prompt: ids})
			}
			if !g.tokenIDs {
				ch.TokenIDs, ch.PromptTokenIDs = nil, nil
			}
			resp.Choices = append(resp.Choices, ch)
		}
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	if g.stream.on {
		return reply{stream: completionChunks(resp, parts, g)}, nil
	}
	return reply{json: resp}, nil
}

// choice builds one completion choice; TokenIDs always set (the caller
// drops them unless asked), for the usage count.
func (h *Handler) choice(ctx context.Context, t target, g *gen, req *CompletionRequest, prompt []int, promptLP []float64, s rl.Sequence) (CompletionChoice, error) {
	tok := t.base.Tokenizer
	sq, err := g.finish(tok, s)
	if err != nil {
		return CompletionChoice{}, err
	}
	ch := CompletionChoice{Text: sq.text, FinishReason: sq.finish, StopReason: sq.stopReason, TokenIDs: sq.tokens, PromptTokenIDs: prompt}
	if ch.TokenIDs == nil {
		ch.TokenIDs = []int{}
	}
	var echoText string
	if req.Echo {
		if echoText, err = tok.Decode(prompt, g.skipSpecial); err != nil {
			return CompletionChoice{}, badRequest("prompt", "decoding the prompt: %v", err)
		}
		ch.Text = echoText + ch.Text
		ch.echoLen = len(echoText)
	}
	if req.Logprobs == nil {
		return ch, nil
	}
	k := *req.Logprobs
	lp := &CompletionLogProbs{TextOffset: []int{}, TokenLogprobs: []*float64{}, Tokens: []string{}, TopLogprobs: []map[string]float64{}}
	offset := 0
	add := func(id int, logprob *float64, alts []rl.TokenLogprob) {
		text := g.tokenText(tok, id)
		lp.Tokens = append(lp.Tokens, text)
		lp.TokenLogprobs = append(lp.TokenLogprobs, logprob)
		lp.TextOffset = append(lp.TextOffset, offset)
		offset += utf8.RuneCountInString(text)
		if logprob == nil {
			lp.TopLogprobs = append(lp.TopLogprobs, nil)
			return
		}
		top := make(map[string]float64, len(alts)+1)
		for _, a := range alts {
			top[g.tokenText(tok, a.Token)] = a.Logprob
		}
		top[text] = *logprob
		lp.TopLogprobs = append(lp.TopLogprobs, top)
	}
	if req.Echo {
		var alts [][]rl.TokenLogprob
		if k > 0 {
			res, err := t.sampler.Sample(ctx, rl.Tokens(prompt), 1, rl.SamplingParams{MaxTokens: 1, TopKPromptLogprobs: k})
			if err != nil {
				return CompletionChoice{}, internal("prompt log-probs: %v", err)
			}
			alts = res.TopKPromptLogprobs
		}
		for i, id := range prompt {
			if i == 0 || i >= len(promptLP) {
				add(id, nil, nil)
				continue
			}
			v := promptLP[i]
			var a []rl.TokenLogprob
			if i < len(alts) {
				a = alts[i]
			}
			add(id, &v, a)
		}
	}
	alts, err := alternatives(ctx, t.sampler, t.base, prompt, sq.tokens, k)
	if err != nil {
		return CompletionChoice{}, internal("top log-probs: %v", err)
	}
	for i, id := range sq.tokens {
		v := sq.logprobs[i]
		add(id, &v, alts[i])
	}
	ch.Logprobs = lp
	return ch, nil
}

// promptLogEntry is vLLM's Logprob of a prompt_logprobs entry.
type promptLogEntry struct {
	Logprob      float64 `json:"logprob"`
	Rank         *int    `json:"rank"`
	DecodedToken string  `json:"decoded_token"`
}

// promptLogprobsJSON is vLLM's prompt_logprobs of a choice: null for the
// first token, then per position a map from token id (as a string) to its
// Logprob — the prompt's own token and the k most likely alternatives,
// ranked 1 … k; the prompt's token is ranked when it is among them and
// has rank null otherwise (tandem does not rank the whole vocabulary).
// Log-probs are the model's log-softmax, clamped at -9999 as vLLM does.
func promptLogprobsJSON(g gen, tok *tokenizer.Tokenizer, prompt []int, out rl.SampleOutput) (json.RawMessage, error) {
	if len(out.PromptLogprobs) != len(prompt) {
		return nil, internal("prompt log-probs: the sampler returned %d for %d prompt tokens", len(out.PromptLogprobs), len(prompt))
	}
	rows := make([]map[string]promptLogEntry, len(prompt))
	for i := 1; i < len(prompt); i++ {
		row := map[string]promptLogEntry{}
		var alts []rl.TokenLogprob
		if i < len(out.TopKPromptLogprobs) {
			alts = out.TopKPromptLogprobs[i]
		}
		for r, a := range alts {
			rank := r + 1
			row[strconv.Itoa(a.Token)] = promptLogEntry{Logprob: max(a.Logprob, -9999), Rank: &rank, DecodedToken: g.tokenText(tok, a.Token)}
		}
		id := strconv.Itoa(prompt[i])
		if _, ok := row[id]; !ok {
			row[id] = promptLogEntry{Logprob: max(out.PromptLogprobs[i], -9999), DecodedToken: g.tokenText(tok, prompt[i])}
		}
		rows[i] = row
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return nil, internal("prompt log-probs: %v", err)
	}
	return b, nil
}
