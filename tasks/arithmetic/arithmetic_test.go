package arithmetic

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/reward"
)

func TestSplitIsDisjointCompleteAndStable(t *testing.T) {
	t.Parallel()
	train, held := Split()
	require.Len(t, held, HeldOutSize)
	require.Len(t, train, (Max+1)*(Max+1)-HeldOutSize)
	seen := map[Problem]bool{}
	for _, p := range append(append([]Problem(nil), train...), held...) {
		require.False(t, seen[p], "duplicate %v", p)
		seen[p] = true
	}
	_, held2 := Split()
	assert.Equal(t, held, held2)
}

func TestCorpusNoiseMatchesConfig(t *testing.T) {
	t.Parallel()
	train, _ := Split()
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := CorpusConfig{CorrectProb: 0.4, WordyProb: 0.15}
	const n = 20000
	right, wordy := 0, 0
	for i := range n {
		p := train[i%len(train)]
		line := cfg.Line(rng, p)
		require.True(t, strings.HasPrefix(line, p.Prompt()+" "), line)
		require.True(t, strings.HasSuffix(line, "\n"))
		c, terse := Grade(p, strings.TrimPrefix(line, p.Prompt()))
		if c {
			right++
		}
		if !terse {
			wordy++
		}
		got, ok := reward.LastInteger(line[len(p.Prompt()):])
		require.True(t, ok)
		assert.LessOrEqual(t, abs(int(got)-p.Answer()), 9)
		assert.GreaterOrEqual(t, got, int64(0))
	}
	// Binomial standard deviation at n = 20000 is under 0.004.
	assert.InDelta(t, 0.4, float64(right)/n, 0.02)
	assert.InDelta(t, 0.15, float64(wordy)/n, 0.02)
}

func TestParsePrompt(t *testing.T) {
	t.Parallel()
	p, err := ParsePrompt(Problem{3, 99}.Prompt())
	require.NoError(t, err)
	assert.Equal(t, Problem{3, 99}, p)
	_, err = ParsePrompt("What is x?")
	require.ErrorContains(t, err, "What is A + B?")
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
