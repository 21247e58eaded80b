package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
)

// A scripted player binary-searches; the environment's transcript and
// rewards follow the protocol.
func TestGuessEpisode(t *testing.T) {
	var tok engine.Tokenizer
	ctx := context.Background()
	g := newGuess(37, 7)
	lo, hi := 0, 99
	var last float64
	for turn := 1; ; turn++ {
		obs, stop, err := g.Observe(ctx)
		require.NoError(t, err)
		assert.Equal(t, []int{engine.Newline}, stop.StopTokens)
		text := tok.Decode(obs.AllTokens()[1:])
		assert.True(t, strings.HasSuffix(text, "?"), text)
		mid := (lo + hi) / 2
		act, _ := tok.Encode(" " + strconv.Itoa(mid) + "\n")
		res, err := g.Step(ctx, act)
		require.NoError(t, err)
		if res.Done {
			last = res.Reward
			assert.Equal(t, 37, mid)
			assert.Equal(t, float64(turn), res.Metrics["turns"])
			break
		}
		obs, _, _ = g.Observe(ctx)
		if strings.HasSuffix(tok.Decode(obs.AllTokens()), "Higher?") && mid < 37 {
			lo = mid + 1
		} else {
			hi = mid - 1
		}
		require.Less(t, turn, 7, "binary search finds 37 within 7 turns")
	}
	assert.Greater(t, last, 0.0)
}

func TestGuessEndsAfterMaxTurnsAndHandlesNonNumbers(t *testing.T) {
	var tok engine.Tokenizer
	ctx := context.Background()
	g := newGuess(5, 2)
	act, _ := tok.Encode(" banana\n")
	res, err := g.Step(ctx, act)
	require.NoError(t, err)
	assert.False(t, res.Done)
	obs, _, _ := g.Observe(ctx)
	assert.Contains(t, tok.Decode(obs.AllTokens()), "A number?")
	res, err = g.Step(ctx, act)
	require.NoError(t, err)
	assert.True(t, res.Done)
	assert.Equal(t, 0.0, res.Reward)
}

func TestGuessEndsBeforeOutgrowingTheContext(t *testing.T) {
	var tok engine.Tokenizer
	ctx := context.Background()
	g := newGuess(5, 100)
	act, _ := tok.Encode(" 99\n")
	for turn := 1; ; turn++ {
		obs, stop, err := g.Observe(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, obs.Len()+stop.MaxTokens, maxContext, "turn %d fits", turn)
		res, err := g.Step(ctx, act)
		require.NoError(t, err)
		if res.Done {
			assert.Equal(t, 1.0, res.Metrics["out_of_context"])
			break
		}
	}
}
