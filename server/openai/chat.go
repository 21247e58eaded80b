package openai

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/rl"
)

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// decodeChat reads and checks a chat completion request's body.
func decodeChat(body []byte) (*ChatRequest, error) {
	var req ChatRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	switch {
	case len(req.Messages) == 0:
		return nil, badRequest("messages", "messages must hold at least one message")
	case present(req.Tools):
		return nil, badRequest("tools", "tools is not supported by tandem serve's chat completions")
	case req.ContinueFinalMessage:
		return nil, badRequest("continue_final_message", "continue_final_message is not supported by tandem serve")
	case req.AddGenerationPrompt != nil && !*req.AddGenerationPrompt:
		return nil, badRequest("add_generation_prompt", "add_generation_prompt false is not supported by tandem serve")
	case req.ChatTemplate != nil:
		return nil, badRequest("chat_template", "chat_template is not supported by tandem serve: the server's renderer is used")
	case req.Echo:
		return nil, badRequest("echo", "echo is not supported by tandem serve's chat completions")
	}
	if k := req.TopLogprobs; k != nil {
		if *k < 0 || *k > MaxLogprobs {
			return nil, badRequest("top_logprobs", "top_logprobs must be in [0, %d], got %d.", MaxLogprobs, *k)
		}
		if *k > 0 && !req.Logprobs {
			return nil, badRequest("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
		}
	}
	return &req, nil
}

// chatCompletions is POST /v1/chat/completions: the messages rendered by
// the model's chat renderer into a generation prompt, each completion
// parsed back into an assistant message.
func (h *Handler) chatCompletions(ctx context.Context, body []byte) (reply, error) {
	req, err := decodeChat(body)
	if err != nil {
		return reply{}, err
	}
	t, err := h.resolve(ctx, req.Model)
	if err != nil {
		return reply{}, err
	}
	b := t.base
	g, err := h.newGen(&req.samplingFields, b, 1)
	if err != nil {
		return reply{}, err
	}
	g.stopStrs = append(g.stopStrs, b.render.StopStrings()...)
	g.p.StopTokens = append(g.p.StopTokens, b.render.StopTokens()...)
	ids, err := b.render.GenerationPrompt(req.Messages, "")
	if err != nil {
		return reply{}, badRequest("messages", "rendering the messages with %s: %v", b.render.Name(), err)
	}
	want, field := req.MaxCompletionTokens, "max_completion_tokens"
	if want == nil {
		want, field = req.MaxTokens, "max_tokens"
	}
	mt, err := maxTokens(b, len(ids), want, field)
	if err != nil {
		return reply{}, err
	}
	if mt == 0 {
		return reply{}, badRequest(field, "%s must be at least 1, got 0.", field)
	}
	p := g.p
	p.MaxTokens = mt
	out, err := t.sampler.Sample(ctx, rl.Tokens(ids), g.n, p)
	if err != nil {
		return reply{}, internal("sampling: %v", err)
	}
	resp := ChatResponse{ID: newID("chatcmpl-"), Object: "chat.completion", Created: h.opts.Now().Unix(), Model: t.name, Choices: []ChatChoice{}}
	resp.Usage.PromptTokens = len(ids)
	var parts []streamPart
	k := 0
	if req.TopLogprobs != nil {
		k = *req.TopLogprobs
	}
	for j, s := range out.Sequences {
		sq, err := g.finish(b.Tokenizer, s)
		if err != nil {
			return reply{}, err
		}
		msg, _, err := b.render.Parse(sq.tokens)
		if err != nil {
			return reply{}, internal("parsing the reply: %v", err)
		}
		ch := ChatChoice{Index: j, Message: replyMessage(msg), FinishReason: sq.finish, StopReason: sq.stopReason}
		if g.tokenIDs {
			ch.TokenIDs = slices.Clone(sq.tokens)
			if ch.TokenIDs == nil {
				ch.TokenIDs = []int{}
			}
		}
		if req.Logprobs {
			alts, err := alternatives(ctx, t.sampler, b, ids, sq.tokens, k)
			if err != nil {
				return reply{}, internal("top log-probs: %v", err)
			}
			lp := &ChatLogProbs{Content: []ChatLogProbsContent{}}
			for i, id := range sq.tokens {
				c := ChatLogProbsContent{ChatLogProb: g.chatLogProb(b, id, sq.logprobs[i]), TopLogprobs: []ChatLogProb{}}
				for _, a := range alts[i] {
					c.TopLogprobs = append(c.TopLogprobs, g.chatLogProb(b, a.Token, a.Logprob))
				}
				lp.Content = append(lp.Content, c)
			}
			ch.Logprobs = lp
		}
		resp.Usage.CompletionTokens += len(sq.tokens)
		resp.Choices = append(resp.Choices, ch)
		if g.stream.on {
			pieces, err := textDeltas(b.Tokenizer, g.skipSpecial, sq.tokens, msg.Content)
			if err != nil {
				return reply{}, err
			}
			parts = append(parts, streamPart{tokens: sq.tokens, pieces: pieces, prompt: ids})
		}
	}
	if g.tokenIDs {
		resp.PromptTokenIDs = ids
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	if g.stream.on {
		return reply{stream: chatChunks(resp, parts, g)}, nil
	}
	return reply{json: resp}, nil
}

func (g *gen) chatLogProb(b *base, id int, logprob float64) ChatLogProb {
	text := g.tokenText(b.Tokenizer, id)
	bs := make([]int, len(text))
	for i := range len(text) {
		bs[i] = int(text[i])
	}
	return ChatLogProb{Token: text, Logprob: logprob, Bytes: bs}
}

// replyMessage is the OpenAI form of a parsed assistant message.
func replyMessage(m chat.Message) ChatMessage {
	content := m.Content
	out := ChatMessage{Role: chat.RoleAssistant, Content: &content, ToolCalls: []ChatToolCall{}}
	if m.Reasoning != "" {
		r := m.Reasoning
		out.Reasoning = &r
	}
	for _, c := range m.ToolCalls {
		tc := ChatToolCall{ID: c.ID, Type: "function"}
		if tc.ID == "" {
			tc.ID = newID("chatcmpl-tool-")
		}
		tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
		out.ToolCalls = append(out.ToolCalls, tc)
	}
	return out
}
