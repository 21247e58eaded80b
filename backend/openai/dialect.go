package openai

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tandemrl/tandem/rl"
)

// dialect is one server protocol. Implementations are stateless apart
// from what info learned, and safe for concurrent use.
type dialect interface {
	// info checks that model ("" = any) is served and returns the base
	// model's name and context length (0 when the server does not say).
	info(ctx context.Context, model string) (name string, maxLen int, err error)
	// generate draws r.n completions (and the prompt's log-probs when
	// r.promptLogprobs and the dialect can in the same request; done then
	// reports it).
	generate(ctx context.Context, r genRequest) (genResult, error)
	// scorePrompt returns the prompt's log-probs (and top-k when k > 0)
	// under neutral sampling (temperature 1, no cuts), generating one
	// token that is discarded.
	scorePrompt(ctx context.Context, model string, prompt []int, k int) (genResult, error)
	load(ctx context.Context, name, path string) error
	unload(ctx context.Context, name string) error
}

// genRequest is one sampling request in tandem's terms, with the
// clamped max_tokens and the seed to send.
type genRequest struct {
	model     string
	prompt    []int
	n         int
	p         rl.SamplingParams
	maxTokens int
	seed      int64
	// promptLogprobs asks for the prompt's log-probs in this request
	// (only when p is neutral, so processed equals plain log-probs);
	// topK > 0 for the top-k alternatives too.
	promptLogprobs bool
	topK           int
}

// genResult is a decoded answer.
type genResult struct {
	seqs       []rl.Sequence
	prompt     []float64           // nil unless asked and given
	promptTopK [][]rl.TokenLogprob // nil unless asked and given
	promptDone bool                // prompt log-probs came with this answer
}

// errAborted marks an answer whose generation the server aborted (pause,
// preemption); the request is retried on the same version.
var errAborted = errors.New("openai: the server aborted the generation")

// neutral reports whether sampling with p draws from the model's plain
// distribution, so processed log-probs of the prompt are plain ones.
func neutral(p rl.SamplingParams) bool {
	return p.Temperature == 1 && p.TopK <= 0 && (p.TopP == 0 || p.TopP == 1)
}

// topP maps tandem's "0 = no cut" to the servers' 1.
func topP(p rl.SamplingParams) float64 {
	if p.TopP == 0 {
		return 1
	}
	return p.TopP
}

// topK maps tandem's "≤ 0 = no cut" to the servers' -1.
func topK(p rl.SamplingParams) int {
	if p.TopK <= 0 {
		return -1
	}
	return p.TopK
}

// emptyIfNil makes a nil slice encode as [] rather than null.
func emptyIfNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// stopReason maps a finish reason to tandem's.
func stopReason(finish string) (rl.StopReason, error) {
	switch finish {
	case "stop":
		return rl.StopStop, nil
	case "length":
		return rl.StopLength, nil
	case "abort":
		return "", errAborted
	}
	return "", fmt.Errorf("%w: finish_reason %q, want stop, length or abort", ErrMalformed, finish)
}

// parseTokenID reads vLLM's "token_id:N" placeholder.
func parseTokenID(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "token_id:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// checkSequence checks one decoded sequence against the request.
func checkSequence(i int, s rl.Sequence, maxTokens int) error {
	if len(s.Tokens) != len(s.Logprobs) {
		return fmt.Errorf("%w: choice %d has %d tokens but %d log-probs", ErrMalformed, i, len(s.Tokens), len(s.Logprobs))
	}
	if len(s.Tokens) > maxTokens {
		return fmt.Errorf("%w: choice %d has %d tokens, more than max_tokens %d", ErrMalformed, i, len(s.Tokens), maxTokens)
	}
	for j, t := range s.Tokens {
		if t < 0 {
			return fmt.Errorf("%w: choice %d token %d is %d", ErrMalformed, i, j, t)
		}
	}
	for j, lp := range s.Logprobs {
		if lp > 1e-6 {
			return fmt.Errorf("%w: choice %d log-prob %d is %v > 0", ErrMalformed, i, j, lp)
		}
	}
	return nil
}
