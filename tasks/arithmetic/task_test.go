package arithmetic

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rollout"
)

func TestPromptTokens(t *testing.T) {
	t.Parallel()
	p := Problem{12, 35}
	ids := p.PromptTokens()
	require.NotEmpty(t, ids)
	assert.Equal(t, engine.BOS, ids[0])
	assert.Len(t, ids, 1+len(p.Prompt()), "one token per character after BOS")
	assert.Equal(t, p.Prompt(), Decode(ids))
	ids[0] = -1
	assert.Equal(t, engine.BOS, p.PromptTokens()[0], "each call returns a fresh slice")

	got, err := EncodePrompt("hi\n")
	require.NoError(t, err)
	assert.Equal(t, "hi\n", Decode(got[1:]))
	var enc *engine.EncodeError
	_, err = EncodePrompt("héllo")
	require.ErrorAs(t, err, &enc)
	assert.Equal(t, 'é', enc.Char)
}

func TestGrade(t *testing.T) {
	t.Parallel()
	p := Problem{12, 35}
	for _, tc := range []struct {
		completion      string
		correct, format bool
	}{
		{" 47", true, true},
		{" 47\n", true, true},
		{" The answer is 47.", true, false},
		{" 46", false, true},
		{" 4 7", false, false},
		{" forty-seven", false, false},
		{"", false, false},
		{" 147", false, true},
		{" -47", false, true},
	} {
		c, f := Grade(p, tc.completion)
		assert.Equal(t, tc.correct, c, "%q correct", tc.completion)
		assert.Equal(t, tc.format, f, "%q format", tc.completion)
	}
}

func TestRewardSumsItsTerms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := Problem{12, 35}
	constant := func(v float64) reward.Func {
		return func(context.Context, reward.Sample) (float64, error) { return v, nil }
	}
	for _, tc := range []struct {
		completion   string
		formatWeight float64
		extra        []reward.Term
		want         float64
	}{
		{" 47\n", FormatWeight, nil, 1 + FormatWeight},
		{" The answer is 47.", FormatWeight, nil, 1},
		{" 46", FormatWeight, nil, FormatWeight},
		{"forty-seven", FormatWeight, nil, 0},
		{" 47", 0, nil, 1},
		{" 46", 0, nil, 0},
		{" 47", 0.5, []reward.Term{{Weight: 2, Func: constant(0.25)}}, 1 + 0.5 + 2*0.25},
	} {
		got, err := Reward(tc.formatWeight, tc.extra...)(ctx, reward.Sample{Text: tc.completion, Reference: p.Reference()})
		require.NoError(t, err)
		assert.InDelta(t, tc.want, got, 1e-12, "%q with format weight %v", tc.completion, tc.formatWeight)
	}
	// The correctness term is the one Grade uses.
	for _, c := range []string{" 47", " 46", " The answer is 47.", ""} {
		v, err := Correctness()(ctx, reward.Sample{Text: c, Reference: p.Reference()})
		require.NoError(t, err)
		ok, _ := Grade(p, c)
		assert.Equal(t, ok, v == 1, "%q", c)
	}
}

func TestProblemsCarryPromptReferenceAndReward(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := []Problem{{1, 2}, {30, 40}}
	items := Problems(ps, Reward(FormatWeight))
	require.Len(t, items, len(ps))
	for i, it := range items {
		st, ok := it.(*rollout.SingleTurn)
		require.True(t, ok)
		assert.Equal(t, ps[i].String(), st.Key())
		assert.Equal(t, ps[i].PromptTokens(), st.Prompt.AllTokens())
		assert.Equal(t, ps[i].Reference(), st.Reference)
		// A rollout of the right terse answer, through the problem's own
		// environment, earns the full reward.
		envs, err := st.Envs(ctx, 1)
		require.NoError(t, err)
		answer, err := tok.Encode(" " + ps[i].Reference() + "\n")
		require.NoError(t, err)
		res, err := envs[0].Step(ctx, answer)
		require.NoError(t, err)
		assert.InDelta(t, 1+FormatWeight, res.Reward, 1e-12)
	}
}

func TestDatasetShufflesTheTrainingSplitBySeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	train, held := Split()
	inHeld := map[string]bool{}
	for _, p := range held {
		inHeld[p.String()] = true
	}
	epoch := func(seed int64, n int) []string {
		d := Dataset(seed, Reward(FormatWeight))
		ids := make([]string, n)
		for i := range ids {
			p, err := d.Next(ctx)
			require.NoError(t, err)
			ids[i] = p.Key()
		}
		return ids
	}
	a := epoch(1, len(train)+1)
	seen := map[string]bool{}
	for _, id := range a[:len(train)] {
		require.False(t, seen[id], "%s twice in one epoch", id)
		require.False(t, inHeld[id], "held-out %s in the training dataset", id)
		seen[id] = true
	}
	assert.Len(t, seen, len(train), "one epoch is every training problem once")
	assert.Equal(t, a[0], a[len(train)], "the next epoch starts over")
	assert.Equal(t, a[:50], epoch(1, 50), "the same seed gives the same order")
	assert.NotEqual(t, a[:50], epoch(2, 50), "another seed another order")
}
