package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// TokenLogprob is a token and its log-probability.
type TokenLogprob struct {
	Token   int
	Logprob float64
}

// MaxPromptTopK bounds the k of PromptTopK.
const MaxPromptTopK = 1024

// topTokens returns the k highest of logits as log-probs (logit − lse),
// most likely first; ties go to the lower token id. It keeps a min-heap
// of k entries: O(Vocab · log k).
func topTokens[T Float](logits []T, k int, lse float64) []TokenLogprob {
	k = min(k, len(logits))
	h := make([]TokenLogprob, 0, k)        // min-heap on (logit, -token)
	less := func(a, b TokenLogprob) bool { // a ranks below b
		return a.Logprob < b.Logprob || (a.Logprob == b.Logprob && a.Token > b.Token)
	}
	down := func(i int) {
		for {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && less(h[l], h[m]) {
				m = l
			}
			if r < len(h) && less(h[r], h[m]) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for t, x := range logits {
		e := TokenLogprob{Token: t, Logprob: float64(x)}
		switch {
		case len(h) < k:
			h = append(h, e)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !less(h[i], h[p]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
		case less(h[0], e):
			h[0] = e
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b TokenLogprob) int {
		if c := cmp.Compare(b.Logprob, a.Logprob); c != 0 {
			return c
		}
		return cmp.Compare(a.Token, b.Token)
	})
	for i := range h {
		h[i].Logprob -= lse
	}
	return h
}

// PromptTopK returns, for each position of seq after the first, the k
// most likely tokens there and their log-probs given the tokens before it
// under the served weights, most likely first (Tinker's
// topk_prompt_logprobs); the first position has none (nil). Cost: one
// forward pass over seq, plus O(len(seq)·Vocab·log k) to select.
func (s *Sampler[T]) PromptTopK(ctx context.Context, seq []int, k int) ([][]TokenLogprob, error) {
	cfg := s.base.Config
	if k < 1 || k > MaxPromptTopK {
		return nil, fmt.Errorf("%w: topk_prompt_logprobs %d must be in [1, %d]", ErrInput, k, MaxPromptTopK)
	}
	if err := checkPrompt(cfg, seq, 0); err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	a := acts[T]{topK: k}
	s.net().forward(&a, [][]int{seq})
	out := make([][]TokenLogprob, len(seq))
	copy(out[1:], a.top[:len(seq)-1])
	return out, nil
}
