package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Sentinels matched with errors.Is. Each is wrapped together with the
// error that caused it (a *StatusError, usually), so errors.As still finds
// the server's answer.
var (
	// ErrRuntimeLoRADisabled: the server has no runtime adapter routes
	// (vLLM answers 404 {"detail":"Not Found"} without --enable-lora and
	// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; SGLang refuses without
	// --enable-lora).
	ErrRuntimeLoRADisabled = errors.New("openai: runtime LoRA loading is disabled on the server")
	// ErrAdapterExists: the server already holds an adapter of that name
	// pointing elsewhere (vLLM's 400 "has already been loaded").
	ErrAdapterExists = errors.New("openai: adapter name already loaded on the server")
	// ErrAdapterRank: the adapter's rank is over the server's
	// --max-lora-rank.
	ErrAdapterRank = errors.New("openai: adapter rank over the server's --max-lora-rank")
	// ErrAdapterNotFound: the server found no adapter at the path.
	ErrAdapterNotFound = errors.New("openai: no adapter at the path the server was given")
	// ErrModelNotServed: the base model named in Options.Model is not
	// served, or the adapter a sample names is unknown to the server.
	ErrModelNotServed = errors.New("openai: model not served")
	// ErrRawLogprobs: the probe found log-probs that are not of the
	// distribution sampled from (see LogprobsError).
	ErrRawLogprobs = errors.New("openai: server log-probs are not of the sampling distribution")
	// ErrMalformed: a 2xx answer that does not decode, or whose tokens and
	// log-probs do not line up.
	ErrMalformed = errors.New("openai: malformed server answer")
	// ErrVersion: Load of a version older than the one served.
	ErrVersion = errors.New("openai: version older than the one served")
)

// StatusError is a non-2xx answer. Message, Type and Param come from the
// body when it is an error object (vLLM's {"error":{…}}, its older flat
// {"object":"error",…}, FastAPI's {"detail":…}); otherwise Message is the
// raw body.
type StatusError struct {
	Method, Path string
	Status       int
	Message      string
	Type         string
	Param        string
	// Detail is true when the body was FastAPI's {"detail": …}, the
	// answer of a route that does not exist (404) or a body that failed
	// validation (422).
	Detail bool
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("openai: %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// Retryable reports whether a sampling request answered so is retried:
// 408, 429, 500, 502, 503 and 504. Loads retry fewer (see Sampler.Load).
func (e *StatusError) Retryable() bool {
	switch e.Status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// ConnError is a request that got no HTTP answer: refused, reset, or cut
// off by the per-request timeout (Err then wraps
// context.DeadlineExceeded).
type ConnError struct {
	Method, Path string
	Err          error
}

func (e *ConnError) Error() string { return fmt.Sprintf("openai: %s %s: %v", e.Method, e.Path, e.Err) }
func (e *ConnError) Unwrap() error { return e.Err }

// LogprobsError is the probe's finding that the server's log-probs are
// not those of the distribution sampled from: with top_k 1 the sampled
// token has probability 1 after processing, so its log-prob must be 0, and
// Got holds what the server returned instead.
type LogprobsError struct {
	Dialect Dialect
	Got     []float64
}

func (e *LogprobsError) Error() string {
	fix := "start vLLM with --logprobs-mode processed_logprobs"
	if e.Dialect == SGLang {
		fix = "this SGLang server returns log-probs before top-k/top-p renormalization; serve it with a build or settings that return the sampling distribution's log-probs"
	}
	return fmt.Sprintf("openai: the server's log-probs are not of the distribution sampled from "+
		"(probe with top_k 1 returned %v, want 0 for every token): %s, "+
		"or set Options.SkipLogprobsProbe to accept them", e.Got, fix)
}

func (e *LogprobsError) Is(target error) bool { return target == ErrRawLogprobs }

// errorBody is the union of the error envelopes servers send.
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   any             `json:"param"`
	Detail  json.RawMessage `json:"detail"`
	// SGLang's adapter answers.
	ErrorMessage *string `json:"error_message"`
}

type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
}

// newStatusError decodes b into a StatusError of status.
func newStatusError(method, path string, status int, b []byte) *StatusError {
	se := &StatusError{Method: method, Path: path, Status: status, Message: strings.TrimSpace(string(b))}
	var eb errorBody
	if json.Unmarshal(b, &eb) != nil {
		return se
	}
	param := func(p any) string {
		if s, ok := p.(string); ok {
			return s
		}
		return ""
	}
	var eo errorObject
	switch {
	case len(eb.Error) > 0 && json.Unmarshal(eb.Error, &eo) == nil && eo.Message != "":
		se.Message, se.Type, se.Param = eo.Message, eo.Type, param(eo.Param)
	case len(eb.Error) > 0 && eb.Error[0] == '"':
		_ = json.Unmarshal(eb.Error, &se.Message)
	case eb.Message != "":
		se.Message, se.Type, se.Param = eb.Message, eb.Type, param(eb.Param)
	case len(eb.Detail) > 0:
		se.Detail = true
		var s string
		if json.Unmarshal(eb.Detail, &s) == nil {
			se.Message = s
		} else {
			se.Message = string(eb.Detail)
		}
	case eb.ErrorMessage != nil:
		se.Message = *eb.ErrorMessage
	}
	return se
}

// classifyLoad maps a failed adapter load to the sentinels, with the
// server flag to change in the message.
func classifyLoad(d Dialect, name, path string, err error) error {
	var se *StatusError
	if !errors.As(err, &se) {
		return fmt.Errorf("openai: load adapter %s from %s: %w", name, path, err)
	}
	msg := strings.ToLower(se.Message)
	switch {
	case d == VLLM && se.Status == http.StatusNotFound && se.Detail:
		return fmt.Errorf("%w: %s answered 404 %q: start vLLM with --enable-lora and the environment "+
			"VLLM_ALLOW_RUNTIME_LORA_UPDATING=True: %w", ErrRuntimeLoRADisabled, se.Path, se.Message, err)
	case strings.Contains(msg, "lora") && (strings.Contains(msg, "not enabled") || strings.Contains(msg, "enable-lora") || strings.Contains(msg, "enable_lora")):
		return fmt.Errorf("%w: start the server with --enable-lora: %w", ErrRuntimeLoRADisabled, err)
	case strings.Contains(msg, "already been loaded") || strings.Contains(msg, "already loaded") || strings.Contains(msg, "already exists"):
		return fmt.Errorf("%w: adapter %s (tandem never reloads a name in place; a name is one version, "+
			"so another run or client registered %s): %w", ErrAdapterExists, name, name, err)
	case strings.Contains(msg, "max_lora_rank") || strings.Contains(msg, "max-lora-rank"):
		return fmt.Errorf("%w: adapter %s: raise the server's --max-lora-rank to at least the adapter's r "+
			"(vLLM allows 1, 8, 16, 32, 64, 128, 256, 320, 512): %w", ErrAdapterRank, name, err)
	case se.Status == http.StatusNotFound && strings.Contains(msg, "no adapter found"):
		return fmt.Errorf("%w: %s (the path is handed to the server as is; the server must be able to "+
			"read it, see Options.PathRewrite): %w", ErrAdapterNotFound, path, err)
	}
	return fmt.Errorf("openai: load adapter %s from %s: %w", name, path, err)
}
