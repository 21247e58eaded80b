package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tandemrl/tandem/rl"
)

// vLLM's wire shapes, written from vllm/entrypoints/openai/completion/
// protocol.py (CompletionRequest, CompletionResponse,
// CompletionResponseChoice, CompletionLogProbs) and
// vllm/entrypoints/serve/lora/protocol.py (LoadLoRAAdapterRequest,
// UnloadLoRAAdapterRequest); commits in testdata/README.md.

// vllmCompletionRequest is POST /v1/completions. Every sampling field is
// sent, none left to the server's generation_config.json defaults.
type vllmCompletionRequest struct {
	Model                  string   `json:"model"`
	Prompt                 []int    `json:"prompt"`
	MaxTokens              int      `json:"max_tokens"`
	N                      int      `json:"n"`
	Temperature            float64  `json:"temperature"`
	TopP                   float64  `json:"top_p"`
	TopK                   int      `json:"top_k"`
	MinP                   float64  `json:"min_p"`
	RepetitionPenalty      float64  `json:"repetition_penalty"`
	PresencePenalty        float64  `json:"presence_penalty"`
	FrequencyPenalty       float64  `json:"frequency_penalty"`
	Seed                   int64    `json:"seed"`
	Stop                   []string `json:"stop"`
	StopTokenIDs           []int    `json:"stop_token_ids"`
	IgnoreEOS              bool     `json:"ignore_eos"`
	MinTokens              int      `json:"min_tokens"`
	IncludeStopStrInOutput bool     `json:"include_stop_str_in_output"`
	SkipSpecialTokens      bool     `json:"skip_special_tokens"`
	AddSpecialTokens       bool     `json:"add_special_tokens"`
	Logprobs               int      `json:"logprobs"`
	PromptLogprobs         *int     `json:"prompt_logprobs,omitempty"`
	Echo                   bool     `json:"echo"`
	ReturnTokenIDs         bool     `json:"return_token_ids"`
	ReturnTokensAsTokenIDs bool     `json:"return_tokens_as_token_ids"`
	Stream                 bool     `json:"stream"`
}

type vllmCompletionResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Model   string       `json:"model"`
	Choices []vllmChoice `json:"choices"`
}

type vllmChoice struct {
	Index          int                          `json:"index"`
	Text           string                       `json:"text"`
	Logprobs       *vllmLogprobs                `json:"logprobs"`
	FinishReason   *string                      `json:"finish_reason"`
	StopReason     any                          `json:"stop_reason"`
	TokenIDs       []int                        `json:"token_ids"`
	PromptLogprobs []map[string]vllmPromptEntry `json:"prompt_logprobs"`
	PromptTokenIDs []int                        `json:"prompt_token_ids"`
}

type vllmLogprobs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

type vllmPromptEntry struct {
	Logprob      float64 `json:"logprob"`
	Rank         *int    `json:"rank"`
	DecodedToken *string `json:"decoded_token"`
}

type vllmModelList struct {
	Object string          `json:"object"`
	Data   []vllmModelCard `json:"data"`
}

type vllmModelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Root        *string `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen *int    `json:"max_model_len"`
}

type vllmLoadRequest struct {
	LoraName    string `json:"lora_name"`
	LoraPath    string `json:"lora_path"`
	LoadInplace bool   `json:"load_inplace"`
}

type vllmUnloadRequest struct {
	LoraName string `json:"lora_name"`
}

type vllm struct{ t *transport }

func (v *vllm) info(ctx context.Context, model string) (string, int, error) {
	var ml vllmModelList
	if err := v.t.sendJSON(ctx, call{method: http.MethodGet, path: "/v1/models", timeout: v.t.opts.AdminTimeout, retry: retryAdmin}, &ml); err != nil {
		return "", 0, fmt.Errorf("openai: list models: %w", err)
	}
	var ids []string
	for _, c := range ml.Data {
		ids = append(ids, c.ID)
		if c.Parent != nil && *c.Parent != "" {
			continue // an adapter card
		}
		if model == "" || c.ID == model {
			n := 0
			if c.MaxModelLen != nil {
				n = *c.MaxModelLen
			}
			return c.ID, n, nil
		}
	}
	return "", 0, fmt.Errorf("%w: %q is not among the base models /v1/models lists (%s); set Options.Model to the server's --served-model-name",
		ErrModelNotServed, model, strings.Join(ids, ", "))
}

// encodeCompletion is the request of r.
func encodeCompletion(r genRequest) vllmCompletionRequest {
	q := vllmCompletionRequest{
		Model: r.model, Prompt: emptyIfNil(r.prompt), MaxTokens: r.maxTokens, N: r.n,
		Temperature: r.p.Temperature, TopP: topP(r.p), TopK: topK(r.p),
		MinP: 0, RepetitionPenalty: 1, PresencePenalty: 0, FrequencyPenalty: 0,
		Seed: r.seed, Stop: emptyIfNil(r.p.StopStrings), StopTokenIDs: emptyIfNil(r.p.StopTokens),
		IgnoreEOS: true, IncludeStopStrInOutput: true, SkipSpecialTokens: false, AddSpecialTokens: false,
		Logprobs: 0, ReturnTokenIDs: true, ReturnTokensAsTokenIDs: true,
	}
	if r.promptLogprobs {
		k := r.topK
		q.PromptLogprobs = &k
	}
	return q
}

func (v *vllm) generate(ctx context.Context, r genRequest) (genResult, error) {
	var res genResult
	_, err := v.t.send(ctx, call{
		method: http.MethodPost, path: "/v1/completions", body: encodeCompletion(r),
		timeout: v.t.opts.RequestTimeout,
		retry: func(err error) bool {
			return errors.Is(err, errAborted) || retrySample(err)
		},
		accept: func(b []byte) error {
			var err error
			res, err = decodeCompletion(b, r)
			return err
		},
	})
	if err != nil {
		return genResult{}, sampleError(r.model, err)
	}
	return res, nil
}

// sampleError names the model in a sampling failure and marks an unknown
// model.
func sampleError(model string, err error) error {
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return fmt.Errorf("%w: %s (a restarted replica loses its adapters): %w", ErrModelNotServed, model, err)
	}
	return fmt.Errorf("openai: sample %s: %w", model, err)
}

// decodeCompletion decodes a /v1/completions answer to r.
func decodeCompletion(b []byte, r genRequest) (genResult, error) {
	var resp vllmCompletionResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return genResult{}, fmt.Errorf("%w: completion: %v", ErrMalformed, err)
	}
	if len(resp.Choices) != r.n {
		return genResult{}, fmt.Errorf("%w: %d choices for n = %d", ErrMalformed, len(resp.Choices), r.n)
	}
	out := genResult{seqs: make([]rl.Sequence, r.n)}
	seen := make([]bool, r.n)
	for _, c := range resp.Choices {
		if c.Index < 0 || c.Index >= r.n || seen[c.Index] {
			return genResult{}, fmt.Errorf("%w: choice index %d repeated or outside [0, %d)", ErrMalformed, c.Index, r.n)
		}
		seen[c.Index] = true
		if c.FinishReason == nil {
			return genResult{}, fmt.Errorf("%w: choice %d has no finish_reason", ErrMalformed, c.Index)
		}
		sr, err := stopReason(*c.FinishReason)
		if err != nil {
			return genResult{}, err
		}
		if c.Logprobs == nil {
			return genResult{}, fmt.Errorf("%w: choice %d has no logprobs (logprobs: 0 was sent)", ErrMalformed, c.Index)
		}
		toks := c.TokenIDs
		if toks == nil { // a server without return_token_ids: the "token_id:N" strings
			toks = make([]int, len(c.Logprobs.Tokens))
			for j, s := range c.Logprobs.Tokens {
				id, ok := parseTokenID(s)
				if !ok {
					return genResult{}, fmt.Errorf("%w: choice %d has no token_ids and token %d is %q, not token_id:N", ErrMalformed, c.Index, j, s)
				}
				toks[j] = id
			}
		}
		lps := make([]float64, len(c.Logprobs.TokenLogprobs))
		for j, lp := range c.Logprobs.TokenLogprobs {
			if lp == nil {
				return genResult{}, fmt.Errorf("%w: choice %d log-prob %d is null", ErrMalformed, c.Index, j)
			}
			lps[j] = *lp
		}
		s := rl.Sequence{Tokens: toks, Logprobs: lps, StopReason: sr}
		if err := checkSequence(c.Index, s, r.maxTokens); err != nil {
			return genResult{}, err
		}
		out.seqs[c.Index] = s
	}
	if r.promptLogprobs {
		// vLLM repeats the prompt's log-probs on every choice; take the
		// first given.
		i := slices.IndexFunc(resp.Choices, func(c vllmChoice) bool { return c.PromptLogprobs != nil })
		if i < 0 {
			return genResult{}, fmt.Errorf("%w: prompt_logprobs asked but not returned", ErrMalformed)
		}
		var err error
		out.prompt, out.promptTopK, err = decodePromptLogprobs(resp.Choices[i].PromptLogprobs, r.prompt, r.topK)
		if err != nil {
			return genResult{}, err
		}
		out.promptDone = true
	}
	return out, nil
}

// decodePromptLogprobs reads vLLM's prompt_logprobs: one entry per prompt
// token, the first null, each a map from token id (as a string) to its
// log-prob, holding the prompt token and the top k.
func decodePromptLogprobs(entries []map[string]vllmPromptEntry, prompt []int, k int) ([]float64, [][]rl.TokenLogprob, error) {
	if len(entries) != len(prompt) {
		return nil, nil, fmt.Errorf("%w: %d prompt_logprobs entries for %d prompt tokens", ErrMalformed, len(entries), len(prompt))
	}
	lps := make([]float64, len(prompt))
	var top [][]rl.TokenLogprob
	if k > 0 {
		top = make([][]rl.TokenLogprob, len(prompt))
	}
	for i, e := range entries {
		if i == 0 {
			continue // no log-prob for the first token (null)
		}
		if e == nil {
			return nil, nil, fmt.Errorf("%w: prompt_logprobs[%d] is null", ErrMalformed, i)
		}
		own, ok := e[strconv.Itoa(prompt[i])]
		if !ok {
			return nil, nil, fmt.Errorf("%w: prompt_logprobs[%d] lacks the prompt token %d", ErrMalformed, i, prompt[i])
		}
		lps[i] = own.Logprob
		if k > 0 {
			row := make([]rl.TokenLogprob, 0, len(e))
			for key, v := range e {
				id, err := strconv.Atoi(key)
				if err != nil || id < 0 {
					return nil, nil, fmt.Errorf("%w: prompt_logprobs[%d] key %q is not a token id", ErrMalformed, i, key)
				}
				row = append(row, rl.TokenLogprob{Token: id, Logprob: v.Logprob})
			}
			sortTop(row)
			if len(row) > k {
				row = row[:k]
			}
			top[i] = row
		}
	}
	return lps, top, nil
}

// sortTop orders alternatives most likely first, ties by token id.
func sortTop(row []rl.TokenLogprob) {
	sort.Slice(row, func(a, b int) bool {
		if row[a].Logprob != row[b].Logprob {
			return row[a].Logprob > row[b].Logprob
		}
		return row[a].Token < row[b].Token
	})
}

func (v *vllm) scorePrompt(ctx context.Context, model string, prompt []int, k int) (genResult, error) {
	return v.generate(ctx, genRequest{
		model: model, prompt: prompt, n: 1, maxTokens: 1,
		p:              rl.SamplingParams{MaxTokens: 1, Temperature: 1},
		promptLogprobs: true, topK: k,
	})
}

func (v *vllm) load(ctx context.Context, name, path string) error {
	_, err := v.t.send(ctx, call{
		method: http.MethodPost, path: "/v1/load_lora_adapter",
		body:    vllmLoadRequest{LoraName: name, LoraPath: path, LoadInplace: false},
		timeout: v.t.opts.AdminTimeout,
		retry: func(err error) bool {
			// 404 "No adapter found" may be a shared file system that has
			// not shown the folder yet; retried within the bounds.
			var se *StatusError
			if errors.As(err, &se) && se.Status == http.StatusNotFound && !se.Detail &&
				strings.Contains(strings.ToLower(se.Message), "no adapter found") {
				return true
			}
			return retryAdmin(err)
		},
	})
	if err == nil {
		return nil
	}
	cerr := classifyLoad(VLLM, name, path, err)
	if errors.Is(cerr, ErrAdapterExists) && v.holds(ctx, name, path) {
		return nil // ours, from an attempt whose answer was lost
	}
	return cerr
}

// holds reports whether /v1/models lists adapter name read from path.
func (v *vllm) holds(ctx context.Context, name, path string) bool {
	var ml vllmModelList
	if v.t.sendJSON(ctx, call{method: http.MethodGet, path: "/v1/models", timeout: v.t.opts.AdminTimeout, retry: retryAdmin}, &ml) != nil {
		return false
	}
	return slices.ContainsFunc(ml.Data, func(c vllmModelCard) bool {
		return c.ID == name && c.Root != nil && *c.Root == path
	})
}

func (v *vllm) unload(ctx context.Context, name string) error {
	_, err := v.t.send(ctx, call{
		method: http.MethodPost, path: "/v1/unload_lora_adapter",
		body: vllmUnloadRequest{LoraName: name}, timeout: v.t.opts.AdminTimeout, retry: noRetry,
	})
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound && !se.Detail {
		return nil // already gone
	}
	if err != nil {
		return fmt.Errorf("openai: unload adapter %s: %w", name, err)
	}
	return nil
}
