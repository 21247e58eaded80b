package openai

import (
	"context"

	"github.com/tandemrl/tandem/tokenizer"
)

// tokenize is POST /tokenize: the completion form (prompt, with
// add_special_tokens default true) or the chat form (messages rendered
// into a generation prompt by the model's renderer).
func (h *Handler) tokenize(_ context.Context, body []byte) (reply, error) {
	var req TokenizeRequest
	if err := decode(body, &req); err != nil {
		return reply{}, err
	}
	b, err := h.baseOf(req.Model)
	if err != nil {
		return reply{}, err
	}
	var ids []int
	switch {
	case req.Prompt != nil && req.Messages != nil:
		return reply{}, badRequest("messages", "give either prompt or messages, not both")
	case req.Prompt != nil:
		add := req.AddSpecialTokens == nil || *req.AddSpecialTokens
		ids = b.Tokenizer.Encode(*req.Prompt, tokenizer.EncodeOptions{AddSpecialTokens: add})
	case req.Messages != nil:
		if req.AddGenerationPrompt != nil && !*req.AddGenerationPrompt {
			return reply{}, badRequest("add_generation_prompt", "add_generation_prompt false is not supported by tandem serve")
		}
		if ids, err = b.render.GenerationPrompt(req.Messages, ""); err != nil {
			return reply{}, badRequest("messages", "rendering the messages with %s: %v", b.render.Name(), err)
		}
	default:
		return reply{}, badRequest("prompt", "give prompt (a string) or messages")
	}
	if ids == nil {
		ids = []int{}
	}
	resp := TokenizeResponse{Count: len(ids), MaxModelLen: b.MaxModelLen, Tokens: ids}
	if req.ReturnTokenStrs {
		resp.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			resp.TokenStrs[i], _ = b.Tokenizer.Token(id)
		}
	}
	return reply{json: resp}, nil
}

// detokenize is POST /detokenize: the text of tokens, special tokens kept.
func (h *Handler) detokenize(_ context.Context, body []byte) (reply, error) {
	var req DetokenizeRequest
	if err := decode(body, &req); err != nil {
		return reply{}, err
	}
	b, err := h.baseOf(req.Model)
	if err != nil {
		return reply{}, err
	}
	if req.Tokens == nil {
		return reply{}, badRequest("tokens", "tokens must be a list of token ids")
	}
	if err := checkIDs(req.Tokens, b, "tokens"); err != nil {
		return reply{}, err
	}
	text, err := b.Tokenizer.Decode(req.Tokens, false)
	if err != nil {
		return reply{}, badRequest("tokens", "%v", err)
	}
	return reply{json: DetokenizeResponse{Prompt: text}}, nil
}
