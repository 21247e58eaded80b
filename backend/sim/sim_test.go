package sim

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func datum(prompt, completion []int, lps []float64) rl.Datum {
	full := append(slices.Clone(prompt), completion...)
	n := len(full) - 1
	tg := make([]int, n)
	copy(tg, full[1:])
	q := make([]float64, n)
	a := make([]float64, n)
	for j := range completion {
		q[len(prompt)-1+j] = lps[j]
		a[len(prompt)-1+j] = 1
	}
	return rl.Datum{ModelInput: rl.Tokens(full[:n]), LossFnInputs: map[string]rl.TensorData{
		rl.InputTargetTokens: rl.IntTensor(tg), rl.InputLogprobs: rl.FloatTensor(q), rl.InputAdvantages: rl.FloatTensor(a)}}
}

// TestSamplerAndTrainerAgreeAtSameVersion: the trainer's log-probs of the
// sampled tokens equal the sampler's exactly when both hold the same
// version, and differ once the trainer has moved on.
func TestSamplerAndTrainerAgreeAtSameVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := NewTrainer(TrainerConfig{})
	s := NewSampler(SamplerConfig{Tokens: 5})
	prompt := []int{3, 1, 4}
	out, err := s.Sample(ctx, rl.Tokens(prompt), 2, rl.SamplingParams{MaxTokens: 16})
	require.NoError(t, err)
	require.Len(t, out.Sequences, 2)
	assert.Equal(t, policy.Version(0), out.Version)
	seq := out.Sequences[1]
	d := datum(prompt, seq.Tokens, seq.Logprobs)

	gap := func() float64 {
		fb, err := tr.ForwardBackward(ctx, []rl.Datum{d}, rl.Loss{Name: rl.ImportanceSampling}).Wait(ctx)
		require.NoError(t, err)
		p := fb.LossFnOutputs[0][rl.InputLogprobs].Floats
		var g float64
		for j := range seq.Tokens {
			pos := len(prompt) - 1 + j
			g += abs(p[pos] - seq.Logprobs[j])
		}
		return g
	}
	assert.Zero(t, gap())
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err)
	assert.Greater(t, gap(), 0.0, "stale sampler: log-probs differ")
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestTrainerVersionsAndOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := NewTrainer(TrainerConfig{Start: 5, OptimStep: Fixed(2 * time.Millisecond), Save: Fixed(time.Millisecond)})
	opt1 := tr.OptimStep(ctx, rl.AdamParams{})
	save := tr.SaveForSampler(ctx, "a")
	opt2 := tr.OptimStep(ctx, rl.AdamParams{})
	// Resolution order is submission order.
	<-save.Done()
	select {
	case <-opt1.Done():
	default:
		t.Fatal("save resolved before the optimizer step submitted earlier")
	}
	ref, err := save.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(6), ref.Version, "save sees the step submitted before it")
	assert.Equal(t, policy.SamplerWeights, ref.Kind)
	o2, err := opt2.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(7), o2.Version)

	st, err := tr.SaveState(ctx, "ckpt").Wait(ctx)
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err)
	_, err = tr.LoadState(ctx, st, true).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(7), tr.Version())
}

func TestTrainerLatenciesAddUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const fb, opt = 20 * time.Millisecond, 10 * time.Millisecond
	tr := NewTrainer(TrainerConfig{ForwardBackward: Fixed(fb), OptimStep: Fixed(opt)})
	start := time.Now()
	f := tr.ForwardBackward(ctx, nil, rl.Loss{})
	o := tr.OptimStep(ctx, rl.AdamParams{})
	_, err := o.Wait(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), fb+opt, "one device: calls run one after another")
	select {
	case <-f.Done():
	default:
		t.Fatal("forward-backward not resolved before the step after it")
	}
}

// TestZeroLatencyCallWaitsItsTurn: a zero-latency call submitted behind
// one with a latency does not overtake it.
func TestZeroLatencyCallWaitsItsTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := NewTrainer(TrainerConfig{ForwardBackward: Fixed(5 * time.Millisecond)})
	f := tr.ForwardBackward(ctx, nil, rl.Loss{})
	o := tr.OptimStep(ctx, rl.AdamParams{})
	out, err := o.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), out.Version)
	select {
	case <-f.Done():
	default:
		t.Fatal("zero-latency step resolved before the forward-backward ahead of it")
	}
}

func TestZeroLatencyResolvesAtOnce(t *testing.T) {
	t.Parallel()
	tr := NewTrainer(TrainerConfig{})
	f := tr.OptimStep(context.Background(), rl.AdamParams{})
	select {
	case <-f.Done():
	default:
		t.Fatal("zero-latency call not resolved on return")
	}
}

func TestDatumShapeChecked(t *testing.T) {
	t.Parallel()
	tr := NewTrainer(TrainerConfig{})
	d := rl.Datum{ModelInput: rl.Tokens([]int{1, 2, 3}), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{2})}}
	_, err := tr.ForwardBackward(context.Background(), []rl.Datum{d}, rl.Loss{}).Wait(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "target_tokens has 1 elements")
}

func TestSamplerLoadAndFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewSampler(SamplerConfig{Fault: func(call uint64) error {
		if call == 2 {
			return rl.ErrTransient
		}
		return nil
	}})
	_, err := s.Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 3})
	require.NoError(t, err)
	_, err = s.Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 3})
	require.ErrorIs(t, err, rl.ErrTransient)
	require.NoError(t, s.Load(ctx, policy.Ref{Version: 4}))
	out, err := s.Sample(ctx, rl.Tokens([]int{1}), 3, rl.SamplingParams{MaxTokens: 3})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(4), out.Version)
	for _, seq := range out.Sequences {
		assert.Len(t, seq.Tokens, 3, "MaxTokens caps the length")
	}
}

func TestSamplerCancel(t *testing.T) {
	t.Parallel()
	s := NewSampler(SamplerConfig{Latency: Fixed(time.Hour)})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := s.Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 1})
		assert.ErrorIs(t, err, context.Canceled)
	}()
	cancel()
	wg.Wait()
}

// TestLogNormalMedian: the sample median of many draws is close to the
// configured median (the log-normal's median is exp(mu)).
func TestLogNormalMedian(t *testing.T) {
	t.Parallel()
	const median = 10 * time.Millisecond
	l := LogNormal(median, 0.5, 1)
	ds := make([]time.Duration, 4001)
	for i := range ds {
		ds[i] = l()
	}
	slices.Sort(ds)
	assert.InEpsilon(t, float64(median), float64(ds[len(ds)/2]), 0.05)
}

func TestLogProbRange(t *testing.T) {
	t.Parallel()
	for v := range policy.Version(20) {
		for tok := range 50 {
			lp := LogProb(v, tok, tok*3)
			require.Less(t, lp, -0.01+1e-12)
			require.GreaterOrEqual(t, lp, -4.0)
		}
	}
	assert.NotEqual(t, LogProb(1, 5, 5), LogProb(2, 5, 5))
}
