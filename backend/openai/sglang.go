package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tandemrl/tandem/rl"
)

// SGLang's wire shapes, written from python/sglang/srt/managers/
// io_struct.py (GenerateReqInput, LoadLoRAAdapterReqInput,
// UnloadLoRAAdapterReqInput) and python/sglang/srt/sampling/
// sampling_params.py (SamplingParams); commits in testdata/README.md.

// sglangGenerateRequest is POST /generate in its batch form: one input per
// sample, each with its own seed, so n samples are n independent draws.
type sglangGenerateRequest struct {
	InputIDs        [][]int                `json:"input_ids"`
	SamplingParams  []sglangSamplingParams `json:"sampling_params"`
	ReturnLogprob   bool                   `json:"return_logprob"`
	LogprobStartLen int                    `json:"logprob_start_len"`
	TopLogprobsNum  int                    `json:"top_logprobs_num"`
	LoraPath        []*string              `json:"lora_path"`
	Stream          bool                   `json:"stream"`
}

// sglangSamplingParams is SGLang's SamplingParams, every field sent.
type sglangSamplingParams struct {
	MaxNewTokens      int      `json:"max_new_tokens"`
	Temperature       float64  `json:"temperature"`
	TopP              float64  `json:"top_p"`
	TopK              int      `json:"top_k"`
	MinP              float64  `json:"min_p"`
	FrequencyPenalty  float64  `json:"frequency_penalty"`
	PresencePenalty   float64  `json:"presence_penalty"`
	RepetitionPenalty float64  `json:"repetition_penalty"`
	MinNewTokens      int      `json:"min_new_tokens"`
	N                 int      `json:"n"`
	Stop              []string `json:"stop"`
	StopTokenIDs      []int    `json:"stop_token_ids"`
	IgnoreEOS         bool     `json:"ignore_eos"`
	NoStopTrim        bool     `json:"no_stop_trim"`
	SkipSpecialTokens bool     `json:"skip_special_tokens"`
	SamplingSeed      int64    `json:"sampling_seed"`
}

type sglangOutput struct {
	Text      string         `json:"text"`
	OutputIDs []int          `json:"output_ids"`
	MetaInfo  sglangMetaInfo `json:"meta_info"`
}

type sglangMetaInfo struct {
	ID                  string            `json:"id"`
	FinishReason        *sglangFinish     `json:"finish_reason"`
	PromptTokens        int               `json:"prompt_tokens"`
	CompletionTokens    int               `json:"completion_tokens"`
	WeightVersion       any               `json:"weight_version"`
	OutputTokenLogprobs []sglangLogprob   `json:"output_token_logprobs"`
	InputTokenLogprobs  []sglangLogprob   `json:"input_token_logprobs"`
	InputTopLogprobs    [][]sglangLogprob `json:"input_top_logprobs"`
}

type sglangFinish struct {
	Type    string `json:"type"`
	Matched any    `json:"matched"`
	Length  int    `json:"length"`
	Message string `json:"message"`
}

// sglangLogprob is one [logprob, token_id, text] triple; the log-prob is
// null for the first prompt token.
type sglangLogprob struct {
	Logprob *float64
	Token   int
}

func (l *sglangLogprob) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) < 2 {
		return fmt.Errorf("logprob entry has %d elements, want [logprob, token_id, text]", len(raw))
	}
	if err := json.Unmarshal(raw[0], &l.Logprob); err != nil {
		return fmt.Errorf("logprob entry: %v", err)
	}
	if err := json.Unmarshal(raw[1], &l.Token); err != nil {
		return fmt.Errorf("logprob entry token: %v", err)
	}
	return nil
}

type sglangModelInfo struct {
	ModelPath       string `json:"model_path"`
	ServedModelName string `json:"served_model_name"`
	IsGeneration    *bool  `json:"is_generation"`
}

type sglangServerInfo struct {
	ContextLength *int  `json:"context_length"`
	EnableLoRA    *bool `json:"enable_lora"`
}

type sglangLoadRequest struct {
	LoraName string `json:"lora_name"`
	LoraPath string `json:"lora_path"`
	Pinned   bool   `json:"pinned"`
}

type sglangUnloadRequest struct {
	LoraName string `json:"lora_name"`
}

type sglangLoRAOutput struct {
	Success      bool    `json:"success"`
	ErrorMessage *string `json:"error_message"`
}

type sglang struct {
	t        *transport
	baseName string
}

func (s *sglang) info(ctx context.Context, model string) (string, int, error) {
	var mi sglangModelInfo
	if err := s.t.sendJSON(ctx, call{method: http.MethodGet, path: "/get_model_info", timeout: s.t.opts.AdminTimeout, retry: retryAdmin}, &mi); err != nil {
		return "", 0, fmt.Errorf("openai: model info: %w", err)
	}
	name := mi.ModelPath
	if model != "" && model != mi.ModelPath && model != mi.ServedModelName {
		return "", 0, fmt.Errorf("%w: %q is not the served model (model_path %q, served_model_name %q)",
			ErrModelNotServed, model, mi.ModelPath, mi.ServedModelName)
	}
	if model != "" {
		name = model
	}
	if mi.IsGeneration != nil && !*mi.IsGeneration {
		return "", 0, fmt.Errorf("%w: %q is not a generation model", ErrModelNotServed, name)
	}
	s.baseName = name
	// The context length is optional: older servers name the route
	// differently; then max_tokens is not clamped.
	var si sglangServerInfo
	if s.t.sendJSON(ctx, call{method: http.MethodGet, path: "/get_server_info", timeout: s.t.opts.AdminTimeout, retry: retryAdmin}, &si) == nil && si.ContextLength != nil {
		return name, *si.ContextLength, nil
	}
	return name, 0, nil
}

// loraPath is the lora_path of model: null for the base model.
func (s *sglang) loraPath(model string) *string {
	if model == s.baseName {
		return nil
	}
	return &model
}

func sglangParams(p rl.SamplingParams, maxTokens int, seed int64) sglangSamplingParams {
	return sglangSamplingParams{
		MaxNewTokens: maxTokens, Temperature: p.Temperature, TopP: topP(p), TopK: topK(p),
		MinP: 0, FrequencyPenalty: 0, PresencePenalty: 0, RepetitionPenalty: 1, MinNewTokens: 0, N: 1,
		Stop: emptyIfNil(p.StopStrings), StopTokenIDs: emptyIfNil(p.StopTokens),
		IgnoreEOS: true, NoStopTrim: true, SkipSpecialTokens: false, SamplingSeed: seed,
	}
}

// encodeGenerate is the batch request of r: sample i seeded with seed+i.
func (s *sglang) encodeGenerate(r genRequest) sglangGenerateRequest {
	q := sglangGenerateRequest{ReturnLogprob: true, LogprobStartLen: -1, TopLogprobsNum: 0}
	for i := range r.n {
		q.InputIDs = append(q.InputIDs, emptyIfNil(r.prompt))
		q.SamplingParams = append(q.SamplingParams, sglangParams(r.p, r.maxTokens, r.seed+int64(i)))
		q.LoraPath = append(q.LoraPath, s.loraPath(r.model))
	}
	return q
}

func (s *sglang) generate(ctx context.Context, r genRequest) (genResult, error) {
	var res genResult
	_, err := s.t.send(ctx, call{
		method: http.MethodPost, path: "/generate", body: s.encodeGenerate(r), timeout: s.t.opts.RequestTimeout,
		retry: func(err error) bool { return errors.Is(err, errAborted) || retrySample(err) },
		accept: func(b []byte) error {
			var err error
			res, err = decodeGenerate(b, r)
			return err
		},
	})
	if err != nil {
		return genResult{}, sampleError(r.model, err)
	}
	return res, nil
}

// decodeOutputs reads a /generate answer: a list, or one object for a
// single input.
func decodeOutputs(b []byte) ([]sglangOutput, error) {
	var outs []sglangOutput
	if err := json.Unmarshal(b, &outs); err == nil {
		return outs, nil
	}
	var one sglangOutput
	if err := json.Unmarshal(b, &one); err != nil {
		return nil, fmt.Errorf("%w: generate: %v", ErrMalformed, err)
	}
	return []sglangOutput{one}, nil
}

// decodeGenerate decodes the answer to r into sequences.
func decodeGenerate(b []byte, r genRequest) (genResult, error) {
	outs, err := decodeOutputs(b)
	if err != nil {
		return genResult{}, err
	}
	if len(outs) != r.n {
		return genResult{}, fmt.Errorf("%w: %d outputs for %d inputs", ErrMalformed, len(outs), r.n)
	}
	res := genResult{seqs: make([]rl.Sequence, r.n)}
	for i, o := range outs {
		if o.MetaInfo.FinishReason == nil {
			return genResult{}, fmt.Errorf("%w: output %d has no finish_reason", ErrMalformed, i)
		}
		sr, err := stopReason(o.MetaInfo.FinishReason.Type)
		if err != nil {
			return genResult{}, err
		}
		lps := o.MetaInfo.OutputTokenLogprobs
		s := rl.Sequence{Tokens: make([]int, len(lps)), Logprobs: make([]float64, len(lps)), StopReason: sr}
		for j, e := range lps {
			if e.Logprob == nil {
				return genResult{}, fmt.Errorf("%w: output %d log-prob %d is null", ErrMalformed, i, j)
			}
			s.Tokens[j], s.Logprobs[j] = e.Token, *e.Logprob
		}
		if o.OutputIDs != nil && !equalInts(o.OutputIDs, s.Tokens) {
			return genResult{}, fmt.Errorf("%w: output %d: output_ids %v differ from the tokens of output_token_logprobs %v",
				ErrMalformed, i, o.OutputIDs, s.Tokens)
		}
		if err := checkSequence(i, s, r.maxTokens); err != nil {
			return genResult{}, err
		}
		res.seqs[i] = s
	}
	return res, nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// scoreRequest is the single neutral request of scorePrompt.
type sglangScoreRequest struct {
	InputIDs        []int                `json:"input_ids"`
	SamplingParams  sglangSamplingParams `json:"sampling_params"`
	ReturnLogprob   bool                 `json:"return_logprob"`
	LogprobStartLen int                  `json:"logprob_start_len"`
	TopLogprobsNum  int                  `json:"top_logprobs_num"`
	LoraPath        *string              `json:"lora_path"`
	Stream          bool                 `json:"stream"`
}

func (s *sglang) scorePrompt(ctx context.Context, model string, prompt []int, k int) (genResult, error) {
	q := sglangScoreRequest{
		InputIDs: emptyIfNil(prompt), SamplingParams: sglangParams(rl.SamplingParams{Temperature: 1}, 1, 0),
		ReturnLogprob: true, LogprobStartLen: 0, TopLogprobsNum: k, LoraPath: s.loraPath(model),
	}
	var res genResult
	_, err := s.t.send(ctx, call{
		method: http.MethodPost, path: "/generate", body: q, timeout: s.t.opts.RequestTimeout,
		retry: func(err error) bool { return errors.Is(err, errAborted) || retrySample(err) },
		accept: func(b []byte) error {
			var err error
			res, err = decodeScore(b, prompt, k)
			return err
		},
	})
	if err != nil {
		return genResult{}, sampleError(model, err)
	}
	return res, nil
}

// decodeScore reads input_token_logprobs (and input_top_logprobs).
func decodeScore(b []byte, prompt []int, k int) (genResult, error) {
	outs, err := decodeOutputs(b)
	if err != nil {
		return genResult{}, err
	}
	if len(outs) != 1 {
		return genResult{}, fmt.Errorf("%w: %d outputs for one input", ErrMalformed, len(outs))
	}
	m := outs[0].MetaInfo
	if len(m.InputTokenLogprobs) != len(prompt) {
		return genResult{}, fmt.Errorf("%w: %d input_token_logprobs for %d prompt tokens", ErrMalformed, len(m.InputTokenLogprobs), len(prompt))
	}
	res := genResult{prompt: make([]float64, len(prompt)), promptDone: true}
	for i, e := range m.InputTokenLogprobs {
		if e.Token != prompt[i] {
			return genResult{}, fmt.Errorf("%w: input_token_logprobs[%d] is of token %d, the prompt has %d", ErrMalformed, i, e.Token, prompt[i])
		}
		if i == 0 {
			continue
		}
		if e.Logprob == nil {
			return genResult{}, fmt.Errorf("%w: input_token_logprobs[%d] is null", ErrMalformed, i)
		}
		res.prompt[i] = *e.Logprob
	}
	if k > 0 {
		if len(m.InputTopLogprobs) != len(prompt) {
			return genResult{}, fmt.Errorf("%w: %d input_top_logprobs for %d prompt tokens", ErrMalformed, len(m.InputTopLogprobs), len(prompt))
		}
		res.promptTopK = make([][]rl.TokenLogprob, len(prompt))
		for i, row := range m.InputTopLogprobs {
			if i == 0 || row == nil {
				continue
			}
			out := make([]rl.TokenLogprob, 0, len(row))
			for _, e := range row {
				if e.Logprob == nil {
					return genResult{}, fmt.Errorf("%w: input_top_logprobs[%d] has a null log-prob", ErrMalformed, i)
				}
				out = append(out, rl.TokenLogprob{Token: e.Token, Logprob: *e.Logprob})
			}
			sortTop(out)
			if len(out) > k {
				out = out[:k]
			}
			res.promptTopK[i] = out
		}
	}
	return res, nil
}

func (s *sglang) load(ctx context.Context, name, path string) error {
	return s.lora(ctx, "/load_lora_adapter", sglangLoadRequest{LoraName: name, LoraPath: path, Pinned: false}, retryAdmin, func(err error) error {
		return classifyLoad(SGLang, name, path, err)
	})
}

func (s *sglang) unload(ctx context.Context, name string) error {
	return s.lora(ctx, "/unload_lora_adapter", sglangUnloadRequest{LoraName: name}, noRetry, func(err error) error {
		if strings.Contains(strings.ToLower(err.Error()), "not found") || strings.Contains(strings.ToLower(err.Error()), "not loaded") {
			return nil // already gone
		}
		return fmt.Errorf("openai: unload adapter %s: %w", name, err)
	})
}

// lora posts an adapter request; SGLang answers {success, error_message},
// a failure becoming a *StatusError carrying error_message.
func (s *sglang) lora(ctx context.Context, path string, body any, retry func(error) bool, wrap func(error) error) error {
	var out sglangLoRAOutput
	err := s.t.sendJSON(ctx, call{method: http.MethodPost, path: path, body: body, timeout: s.t.opts.AdminTimeout, retry: retry}, &out)
	if err == nil && !out.Success {
		msg := "success: false"
		if out.ErrorMessage != nil {
			msg = *out.ErrorMessage
		}
		err = &StatusError{Method: http.MethodPost, Path: path, Status: http.StatusOK, Message: msg, Type: "success=false"}
	}
	if err != nil {
		return wrap(err)
	}
	return nil
}
