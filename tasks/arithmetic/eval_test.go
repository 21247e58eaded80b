package arithmetic

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// answerer is a fake sampler that reads the problem off the prompt and
// answers by a fixed rule of its operands: right and terse, right and
// wordy, or wrong and terse. It serves version 5, or 4 for problems with
// A = 0, and records the seeds it was given and how many calls overlapped.
type answerer struct {
	mu          sync.Mutex
	seeds       map[Problem]int64
	calls       int
	inFlight    int
	maxInFlight int
	// fail, if set, makes the call for this problem fail and every other
	// call wait for its context to end.
	fail *Problem
}

var errSampler = errors.New("sampler failed")

func answer(p Problem) string {
	switch (p.A + p.B) % 3 {
	case 0:
		return fmt.Sprintf(" %d\n", p.Answer())
	case 1:
		return fmt.Sprintf(" The answer is %d.\n", p.Answer())
	}
	return fmt.Sprintf(" %d\n", p.Answer()+1)
}

func (a *answerer) Sample(ctx context.Context, prompt rl.ModelInput, n int, params rl.SamplingParams) (rl.SampleOutput, error) {
	ids := prompt.AllTokens()
	if len(ids) == 0 || ids[0] != 0 {
		return rl.SampleOutput{}, fmt.Errorf("prompt %v does not start with BOS", ids)
	}
	p, err := ParsePrompt(Decode(ids))
	if err != nil {
		return rl.SampleOutput{}, err
	}
	a.mu.Lock()
	a.calls++
	a.inFlight++
	a.maxInFlight = max(a.maxInFlight, a.inFlight)
	if params.Seed != nil {
		a.seeds[p] = *params.Seed
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.inFlight--
		a.mu.Unlock()
	}()
	if a.fail != nil {
		if p == *a.fail {
			return rl.SampleOutput{}, errSampler
		}
		<-ctx.Done()
		return rl.SampleOutput{}, ctx.Err()
	}
	toks, err := tok.Encode(answer(p))
	if err != nil {
		return rl.SampleOutput{}, err
	}
	v := policy.Version(5)
	if p.A == 0 {
		v = 4
	}
	return rl.SampleOutput{Sequences: []rl.Sequence{{Tokens: toks}}, Version: v}, nil
}

func (a *answerer) Load(context.Context, policy.Ref) error { return nil }

func TestEvaluateGradesEveryProblemInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, held := Split()
	problems := held[:60]
	// The naive count, from the same rule.
	var want EvalResult
	want.Problems, want.Version = len(problems), 5
	for _, p := range problems {
		c, f := Grade(p, answer(p))
		if c {
			want.Correct++
		}
		if f {
			want.WellFormed++
		}
		if p.A == 0 {
			want.Version = 4
		}
	}
	want.Accuracy = float64(want.Correct) / float64(want.Problems)
	require.Positive(t, want.Correct)
	require.Less(t, want.Correct, want.Problems)

	for _, parallel := range []int{0, 1, 4, 100} {
		s := &answerer{seeds: map[Problem]int64{}}
		got, err := Evaluate(ctx, s, problems, rl.SamplingParams{MaxTokens: 8}, 1000, parallel)
		require.NoError(t, err)
		assert.Equal(t, want, got, "parallel %d", parallel)
		assert.Equal(t, len(problems), s.calls)
		assert.LessOrEqual(t, s.maxInFlight, max(1, parallel), "parallel %d bounds the calls", parallel)
		for i, p := range problems {
			assert.Equal(t, int64(1000+i), s.seeds[p], "problem %d's seed", i)
		}
	}

	got, err := Evaluate(ctx, &answerer{seeds: map[Problem]int64{}}, nil, rl.SamplingParams{}, 1, 4)
	require.NoError(t, err)
	assert.Equal(t, EvalResult{Version: -1}, got)
}

func TestEvaluateFirstErrorCancelsTheRest(t *testing.T) {
	t.Parallel()
	_, held := Split()
	problems := held[:40]
	const parallel = 3
	s := &answerer{seeds: map[Problem]int64{}, fail: &problems[0]}
	_, err := Evaluate(context.Background(), s, problems, rl.SamplingParams{}, 1, parallel)
	require.ErrorIs(t, err, errSampler)
	assert.ErrorContains(t, err, "evaluate "+problems[0].String())
	// The other calls waited for cancellation (they would block forever
	// otherwise), and no call started after it.
	assert.LessOrEqual(t, s.calls, parallel)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = &answerer{seeds: map[Problem]int64{}}
	_, err = Evaluate(ctx, s, problems, rl.SamplingParams{}, 1, parallel)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, s.calls, "nothing is sampled once ctx has ended")
}
