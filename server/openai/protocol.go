package openai

import (
	"bytes"
	"encoding/json"

	"github.com/tandemrl/tandem/chat"
)

// Prompt is a completion request's prompt: text, a list of token ids, or
// a batch of either (vLLM's list[int] | list[list[int]] | str | list[str]).
type Prompt struct {
	Items []PromptItem
}

// PromptItem is one prompt of a batch: Text when IsText, else IDs.
type PromptItem struct {
	IsText bool
	Text   string
	IDs    []int
}

// UnmarshalJSON reads any of the four forms; a list mixing strings and id
// lists, or nesting deeper, is refused naming the field.
func (p *Prompt) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	p.Items = nil
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return badRequest("prompt", "field \"prompt\": %v", err)
		}
		p.Items = []PromptItem{{IsText: true, Text: s}}
		return nil
	case len(b) > 0 && b[0] == '[':
	default:
		return badRequest("prompt", "field \"prompt\" must be a string, a list of token ids, a list of strings or a list of token-id lists")
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return badRequest("prompt", "field \"prompt\": %v", err)
	}
	if len(raw) == 0 {
		p.Items = []PromptItem{{IDs: []int{}}}
		return nil
	}
	first := bytes.TrimSpace(raw[0])
	switch {
	case len(first) > 0 && first[0] == '"':
		var ss []string
		if err := json.Unmarshal(b, &ss); err != nil {
			return badRequest("prompt", "field \"prompt\": a list of strings must hold only strings")
		}
		for _, s := range ss {
			p.Items = append(p.Items, PromptItem{IsText: true, Text: s})
		}
	case len(first) > 0 && first[0] == '[':
		var ll [][]int
		if err := json.Unmarshal(b, &ll); err != nil {
			return badRequest("prompt", "field \"prompt\": a list of token-id lists must hold only lists of integers")
		}
		for _, ids := range ll {
			p.Items = append(p.Items, PromptItem{IDs: ids})
		}
	default:
		var ids []int
		if err := json.Unmarshal(b, &ids); err != nil {
			return badRequest("prompt", "field \"prompt\": a list of token ids must hold only integers")
		}
		p.Items = []PromptItem{{IDs: ids}}
	}
	return nil
}

// StopList is vLLM's stop: a string or a list of strings.
type StopList []string

// UnmarshalJSON reads a string, a list of strings or null.
func (s *StopList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*s = nil
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return badRequest("stop", "field \"stop\": %v", err)
		}
		*s = StopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return badRequest("stop", "field \"stop\" must be a string or a list of strings")
	}
	*s = many
	return nil
}

// samplingFields are the sampling parameters completions and chat share
// (vLLM's completion-sampling-params and chat-completion-sampling-params).
type samplingFields struct {
	Model                  string             `json:"model"`
	N                      *int               `json:"n"`
	Seed                   *int64             `json:"seed"`
	Stop                   StopList           `json:"stop"`
	Stream                 *bool              `json:"stream"`
	StreamOptions          json.RawMessage    `json:"stream_options"`
	Temperature            *float64           `json:"temperature"`
	TopP                   *float64           `json:"top_p"`
	TopK                   *int               `json:"top_k"`
	MinP                   *float64           `json:"min_p"`
	FrequencyPenalty       *float64           `json:"frequency_penalty"`
	PresencePenalty        *float64           `json:"presence_penalty"`
	RepetitionPenalty      *float64           `json:"repetition_penalty"`
	LogitBias              map[string]float64 `json:"logit_bias"`
	UseBeamSearch          bool               `json:"use_beam_search"`
	StopTokenIDs           []int              `json:"stop_token_ids"`
	IncludeStopStrInOutput bool               `json:"include_stop_str_in_output"`
	IgnoreEOS              bool               `json:"ignore_eos"`
	MinTokens              int                `json:"min_tokens"`
	SkipSpecialTokens      *bool              `json:"skip_special_tokens"`
	AddSpecialTokens       *bool              `json:"add_special_tokens"`
	AllowedTokenIDs        []int              `json:"allowed_token_ids"`
	PromptLogprobs         *int               `json:"prompt_logprobs"`
	ResponseFormat         json.RawMessage    `json:"response_format"`
	StructuredOutputs      json.RawMessage    `json:"structured_outputs"`
	LogitsProcessors       json.RawMessage    `json:"logits_processors"`
	ReturnTokenIDs         *bool              `json:"return_token_ids"`
	ReturnTokensAsTokenIDs *bool              `json:"return_tokens_as_token_ids"`
	User                   string             `json:"user"`
}

// CompletionRequest is the body of POST /v1/completions (vLLM's
// CompletionRequest; fields not listed are ignored, as vLLM does).
type CompletionRequest struct {
	samplingFields
	Prompt       Prompt          `json:"prompt"`
	Echo         bool            `json:"echo"`
	Logprobs     *int            `json:"logprobs"`
	MaxTokens    *int            `json:"max_tokens"`
	Suffix       *string         `json:"suffix"`
	PromptEmbeds json.RawMessage `json:"prompt_embeds"`
}

// CompletionLogProbs is vLLM's CompletionLogProbs. A nil entry of
// TokenLogprobs or TopLogprobs is JSON null (the first echoed prompt token).
type CompletionLogProbs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

// CompletionChoice is vLLM's CompletionResponseChoice. StopReason is the
// stop string or token id that ended the completion (nil otherwise, EOS
// included); TokenIDs and PromptTokenIDs are set with return_token_ids.
type CompletionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *CompletionLogProbs `json:"logprobs"`
	FinishReason   string              `json:"finish_reason"`
	StopReason     any                 `json:"stop_reason"`
	TokenIDs       []int               `json:"token_ids,omitempty"`
	PromptLogprobs json.RawMessage     `json:"prompt_logprobs,omitempty"`
	PromptTokenIDs []int               `json:"prompt_token_ids,omitempty"`

	echoLen int // bytes of Text that echo the prompt
}

// Usage is vLLM's UsageInfo.
type Usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	TotalTokens         int `json:"total_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails any `json:"prompt_tokens_details"`
}

// CompletionResponse is vLLM's CompletionResponse.
type CompletionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	Choices           []CompletionChoice `json:"choices"`
	ServiceTier       *string            `json:"service_tier"`
	SystemFingerprint *string            `json:"system_fingerprint"`
	Usage             Usage              `json:"usage"`
	KVTransferParams  any                `json:"kv_transfer_params"`
}

// ChatRequest is the body of POST /v1/chat/completions (vLLM's
// ChatCompletionRequest, the fields tandem honours or refuses).
type ChatRequest struct {
	samplingFields
	Messages             []chat.Message  `json:"messages"`
	Logprobs             bool            `json:"logprobs"`
	TopLogprobs          *int            `json:"top_logprobs"`
	MaxTokens            *int            `json:"max_tokens"`
	MaxCompletionTokens  *int            `json:"max_completion_tokens"`
	Tools                json.RawMessage `json:"tools"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ChatTemplate         *string         `json:"chat_template"`
	Echo                 bool            `json:"echo"`
}

// ChatLogProb is vLLM's ChatCompletionLogProb.
type ChatLogProb struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// ChatLogProbsContent is vLLM's ChatCompletionLogProbsContent.
type ChatLogProbsContent struct {
	ChatLogProb
	TopLogprobs []ChatLogProb `json:"top_logprobs"`
}

// ChatLogProbs is vLLM's ChatCompletionLogProbs.
type ChatLogProbs struct {
	Content []ChatLogProbsContent `json:"content"`
}

// ChatToolCall is an OpenAI tool call in a reply.
type ChatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatMessage is vLLM's ChatMessage (the reply).
type ChatMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []ChatToolCall `json:"tool_calls"`
	Reasoning *string        `json:"reasoning"`
}

// ChatChoice is vLLM's ChatCompletionResponseChoice.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      ChatMessage   `json:"message"`
	Logprobs     *ChatLogProbs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
	StopReason   any           `json:"stop_reason"`
	TokenIDs     []int         `json:"token_ids,omitempty"`
}

// ChatResponse is vLLM's ChatCompletionResponse.
type ChatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []ChatChoice `json:"choices"`
	ServiceTier       *string      `json:"service_tier"`
	SystemFingerprint *string      `json:"system_fingerprint"`
	Usage             Usage        `json:"usage"`
	PromptLogprobs    any          `json:"prompt_logprobs"`
	PromptTokenIDs    []int        `json:"prompt_token_ids,omitempty"`
	KVTransferParams  any          `json:"kv_transfer_params"`
}

// LoadLoRARequest is vLLM's LoadLoRAAdapterRequest. BaseModelName is a
// tandem extension naming the served base the adapter adapts (needed only
// when the handler serves several).
type LoadLoRARequest struct {
	LoraName      string `json:"lora_name"`
	LoraPath      string `json:"lora_path"`
	LoadInplace   bool   `json:"load_inplace"`
	BaseModelName string `json:"base_model_name"`
}

// UnloadLoRARequest is vLLM's UnloadLoRAAdapterRequest.
type UnloadLoRARequest struct {
	LoraName  string `json:"lora_name"`
	LoraIntID *int   `json:"lora_int_id"`
}

// ModelPermission is vLLM's ModelPermission.
type ModelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

// ModelCard is vLLM's ModelCard: a base has Parent nil and MaxModelLen
// set; a LoRA adapter has Root its lora_path, Parent its base, and no
// MaxModelLen.
type ModelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        *string           `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen *int              `json:"max_model_len"`
	Permission  []ModelPermission `json:"permission"`
}

// ModelList is vLLM's ModelList.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelCard `json:"data"`
}

// TokenizeRequest is vLLM's TokenizeRequest: the completion form (Prompt)
// or the chat form (Messages).
type TokenizeRequest struct {
	Model               string         `json:"model"`
	Prompt              *string        `json:"prompt"`
	Messages            []chat.Message `json:"messages"`
	AddSpecialTokens    *bool          `json:"add_special_tokens"`
	AddGenerationPrompt *bool          `json:"add_generation_prompt"`
	ReturnTokenStrs     bool           `json:"return_token_strs"`
}

// TokenizeResponse is vLLM's TokenizeResponse.
type TokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int    `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// DetokenizeRequest is vLLM's DetokenizeRequest.
type DetokenizeRequest struct {
	Model  string `json:"model"`
	Tokens []int  `json:"tokens"`
}

// DetokenizeResponse is vLLM's DetokenizeResponse.
type DetokenizeResponse struct {
	Prompt string `json:"prompt"`
}
