package engine

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// PromptTopK against a naive reference: each position's log-prob of every
// token, one ComputeLogprobs call per (position, token), sorted.
func TestPromptTopK(t *testing.T) {
	t.Parallel()
	cfg := qwenLikeConfig()
	cfg.Context = 16
	base := hfModel[float64](t, cfg, 3)
	s, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	seq := []int{1, 7, 3, 3, 42, 5}
	for _, k := range []int{1, 5, cfg.Vocab, cfg.Vocab + 10} {
		got, err := s.PromptTopK(ctx, seq, k)
		require.NoError(t, err)
		require.Len(t, got, len(seq))
		assert.Nil(t, got[0], "the first position has none")
		for i := 1; i < len(seq); i++ {
			var all []TokenLogprob
			for tok := range cfg.Vocab {
				lp, err := s.ComputeLogprobs(ctx, append(slices.Clone(seq[:i]), tok))
				require.NoError(t, err)
				all = append(all, TokenLogprob{Token: tok, Logprob: lp[i]})
			}
			slices.SortStableFunc(all, func(a, b TokenLogprob) int { return cmp.Compare(b.Logprob, a.Logprob) })
			want := all[:min(k, cfg.Vocab)]
			require.Len(t, got[i], len(want), "k %d position %d", k, i)
			for j := range want {
				assert.Equal(t, want[j].Token, got[i][j].Token, "k %d position %d rank %d", k, i, j)
				assert.InDelta(t, want[j].Logprob, got[i][j].Logprob, 1e-12)
			}
		}
	}
	_, err = s.PromptTopK(ctx, seq, 0)
	assert.ErrorIs(t, err, ErrInput)
	_, err = s.PromptTopK(ctx, []int{1, cfg.Vocab}, 2)
	assert.ErrorIs(t, err, ErrInput)
}

// topTokens breaks ties toward the lower token id and keeps the k best.
func TestTopTokensTies(t *testing.T) {
	t.Parallel()
	got := topTokens([]float32{1, 3, 3, 0, 3, 2}, 4, 0)
	assert.Equal(t, []TokenLogprob{{1, 3}, {2, 3}, {4, 3}, {5, 2}}, got)
}
