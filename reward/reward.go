// Package reward holds the reward-function contract and built-in rewards:
// exact match, final-integer match, a regex format check, a length penalty
// and a weighted sum to combine them.
//
// A reward function is plain Go: it scores one sampled completion. Functions
// must be safe for concurrent use (rollout workers call them in parallel);
// the built-ins are.
package reward

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Sample is what a reward function scores: one completion of one prompt.
// Slices are shared with the rollout; a Func must not modify them.
type Sample struct {
	// Prompt holds the prompt tokens.
	Prompt []int
	// Tokens holds the completion tokens.
	Tokens []int
	// Text is the decoded completion ("" when no decoder was given).
	Text string
	// Reference is the dataset's expected answer, if any.
	Reference string
	// Truncated is set when sampling stopped at max_tokens.
	Truncated bool
}

// Func scores a sample. An error fails the rollout it belongs to (counted,
// the run goes on); a panic is recovered by the rollout worker.
type Func func(ctx context.Context, s Sample) (float64, error)

// ExactMatch gives 1 when the completion text, trimmed of surrounding
// white space, equals the reference (also trimmed), else 0.
func ExactMatch() Func {
	return func(_ context.Context, s Sample) (float64, error) {
		if strings.TrimSpace(s.Text) == strings.TrimSpace(s.Reference) {
			return 1, nil
		}
		return 0, nil
	}
}

// FinalInteger gives 1 when the last integer written in the completion
// (optionally signed, commas as thousands separators ignored) equals the
// reference integer, else 0. A reference that is not an integer is an
// error.
func FinalInteger() Func {
	return func(_ context.Context, s Sample) (float64, error) {
		want, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(s.Reference), ",", ""), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reward: final integer: reference %q is not an integer", s.Reference)
		}
		got, ok := LastInteger(s.Text)
		if ok && got == want {
			return 1, nil
		}
		return 0, nil
	}
}

// LastInteger returns the last integer in text: a run of digits (commas
// between digits allowed) with an optional leading '-'.
func LastInteger(text string) (int64, bool) {
	end := -1
	for i := len(text) - 1; i >= 0; i-- {
		if text[i] >= '0' && text[i] <= '9' {
			end = i + 1
			break
		}
	}
	if end < 0 {
		return 0, false
	}
	start := end
	for start > 0 {
		c := text[start-1]
		if c >= '0' && c <= '9' {
			start--
			continue
		}
		if c == ',' && start >= 2 && text[start-2] >= '0' && text[start-2] <= '9' {
			start--
			continue
		}
		break
	}
	digits := strings.ReplaceAll(text[start:end], ",", "")
	if start > 0 && text[start-1] == '-' {
		digits = "-" + digits
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// Format gives 1 when the completion text matches pattern, else 0. The
// pattern is compiled once; an invalid pattern is an error here, not at
// scoring time.
func Format(pattern string) (Func, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("reward: format pattern %q: %w", pattern, err)
	}
	return func(_ context.Context, s Sample) (float64, error) {
		if re.MatchString(s.Text) {
			return 1, nil
		}
		return 0, nil
	}, nil
}

// LengthPenalty gives −perToken × (tokens beyond free), where tokens counts
// the completion tokens; at most free tokens cost nothing. A truncated
// completion costs an extra truncated (pass 0 for none).
func LengthPenalty(free int, perToken, truncated float64) Func {
	return func(_ context.Context, s Sample) (float64, error) {
		var p float64
		if over := len(s.Tokens) - free; over > 0 {
			p -= perToken * float64(over)
		}
		if s.Truncated {
			p -= truncated
		}
		return p, nil
	}
}

// Term is one weighted part of a Sum.
type Term struct {
	Weight float64
	Func   Func
}

// Sum gives Σ weight·f(s) over terms. The first error stops the sum and is
// returned with the index of its term. A non-finite total is an error.
func Sum(terms ...Term) Func {
	terms = append([]Term(nil), terms...)
	return func(ctx context.Context, s Sample) (float64, error) {
		var total float64
		for i, t := range terms {
			if t.Weight == 0 {
				continue
			}
			v, err := t.Func(ctx, s)
			if err != nil {
				return 0, fmt.Errorf("reward: term %d: %w", i, err)
			}
			total += t.Weight * v
		}
		if math.IsNaN(total) || math.IsInf(total, 0) {
			return 0, fmt.Errorf("reward: sum is %v; rewards must be finite", total)
		}
		return total, nil
	}
}

// Normalize lower-cases text and collapses runs of white space to one
// space, for comparisons that should ignore case and spacing.
func Normalize(text string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(text) {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
