package local

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/sourcegraph/conc/panics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func tinyBase(t *testing.T) *engine.Model[float32] {
	t.Helper()
	return enginetest.Model(t, 2, 32, 7)
}

// ceDatum makes a cross-entropy datum teaching "hello".
func ceDatum(t *testing.T) rl.Datum {
	t.Helper()
	ids, err := engine.Tokenizer{}.Encode("hello")
	require.NoError(t, err)
	seq := append([]int{engine.BOS}, ids...)
	return rl.Datum{
		ModelInput:   rl.Tokens(seq[:len(seq)-1]),
		LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(seq[1:])},
	}
}

func TestTrainPublishSampleRoundTrip(t *testing.T) {
	ctx := context.Background()
	base := tinyBase(t)
	tr, err := NewTrainer(base, TrainerOptions{Run: "t"})
	require.NoError(t, err)
	defer tr.Close()
	smp, err := NewSampler(base, SamplerOptions{Shelf: tr.Shelf()})
	require.NoError(t, err)

	d := ceDatum(t)
	loss := rl.Loss{Name: rl.CrossEntropy}
	var first, last float64
	for i := range 30 {
		// Pipelined: submit both, then wait on both.
		fb := tr.ForwardBackward(ctx, []rl.Datum{d}, loss)
		os := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1e-2})
		out, err := fb.Wait(ctx)
		require.NoError(t, err)
		st, err := os.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, policy.Version(i+1), st.Version)
		if i == 0 {
			first = out.Metrics["loss:sum"]
		}
		last = out.Metrics["loss:sum"]
	}
	assert.Less(t, last, first/2, "cross-entropy falls on the one sequence")

	ref, err := tr.SaveForSampler(ctx, "v30").Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(30), ref.Version)
	assert.Equal(t, "tinker://t/sampler_weights/v30", ref.URI)
	require.NoError(t, smp.Load(ctx, ref))
	assert.Equal(t, policy.Version(30), smp.Version())

	seed := int64(3)
	prompt := rl.Tokens([]int{engine.BOS})
	out, err := smp.Sample(ctx, prompt, 4, rl.SamplingParams{MaxTokens: 5, Temperature: 1, Seed: &seed})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(30), out.Version)
	require.Len(t, out.Sequences, 4)

	// The sampler's log-probs at temperature 1 are the trainer's log-probs of
	// the same tokens: the log-prob gap of a correct weight sync is ~0.
	var data []rl.Datum
	for _, sq := range out.Sequences {
		seq := append([]int{engine.BOS}, sq.Tokens...)
		data = append(data, rl.Datum{ModelInput: rl.Tokens(seq[:len(seq)-1]), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(seq[1:])}})
	}
	fw, err := tr.Forward(ctx, data, loss).Wait(ctx)
	require.NoError(t, err)
	for i, sq := range out.Sequences {
		p := fw.LossFnOutputs[i][rl.InputLogprobs].Floats
		require.Len(t, p, len(sq.Logprobs))
		for j := range p {
			assert.InDelta(t, p[j], sq.Logprobs[j], 1e-4)
		}
	}
}

func TestSampleBeforeAnyLoadIsVersionZeroAndDeterministic(t *testing.T) {
	ctx := context.Background()
	smp, err := NewSampler(tinyBase(t), SamplerOptions{})
	require.NoError(t, err)
	seed := int64(11)
	p := rl.SamplingParams{MaxTokens: 8, Temperature: 1, Seed: &seed}
	a, err := smp.Sample(ctx, rl.Tokens([]int{engine.BOS}), 3, p)
	require.NoError(t, err)
	b, err := smp.Sample(ctx, rl.Tokens([]int{engine.BOS}), 3, p)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Equal(t, policy.Version(0), a.Version)
}

func TestStateRoundTripThroughStore(t *testing.T) {
	ctx := context.Background()
	store, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	base := tinyBase(t)
	d := ceDatum(t)
	loss := rl.Loss{Name: rl.CrossEntropy}
	adam := rl.AdamParams{LearningRate: 1e-2}

	run := func(tr *Trainer, steps int) []float64 {
		var losses []float64
		for range steps {
			out, err := tr.ForwardBackward(ctx, []rl.Datum{d}, loss).Wait(ctx)
			require.NoError(t, err)
			_, err = tr.OptimStep(ctx, adam).Wait(ctx)
			require.NoError(t, err)
			losses = append(losses, out.Metrics["loss:sum"])
		}
		return losses
	}
	// Uninterrupted: 6 steps.
	a, err := NewTrainer(base, TrainerOptions{Run: "r", Store: store})
	require.NoError(t, err)
	want := run(a, 6)
	require.NoError(t, a.Close())

	// Interrupted after 3, resumed from saved state with optimizer.
	b, err := NewTrainer(base, TrainerOptions{Run: "r", Store: store})
	require.NoError(t, err)
	run(b, 3)
	ref, err := b.SaveState(ctx, "s3").Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(3), ref.Version)
	require.NoError(t, b.Close())

	c, err := NewTrainer(base, TrainerOptions{Run: "r", Store: store})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.LoadState(ctx, ref, true).Wait(ctx)
	require.NoError(t, err)
	got := run(c, 3)
	assert.Equal(t, want[3:], got, "resumed steps match the uninterrupted run exactly")
	st, err := c.OptimStep(ctx, adam).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(7), st.Version)
}

func TestBadInputs(t *testing.T) {
	ctx := context.Background()
	base := tinyBase(t)
	tr, err := NewTrainer(base, TrainerOptions{})
	require.NoError(t, err)
	good := ceDatum(t)
	n := good.ModelInput.Len()
	for _, tc := range []struct {
		name string
		d    rl.Datum
		loss rl.LossName
		want string
	}{
		{"no targets", rl.Datum{ModelInput: good.ModelInput}, rl.CrossEntropy, `no "target_tokens"`},
		{"short targets", rl.Datum{ModelInput: good.ModelInput, LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{1})}}, rl.CrossEntropy, "1 values for 5 input tokens"},
		{"float targets", rl.Datum{ModelInput: good.ModelInput, LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.FloatTensor(make([]float64, n))}}, rl.CrossEntropy, "want int64"},
		{"rl loss without advantages", good, rl.ImportanceSampling, `needs loss_fn_inputs "logprobs"`},
		{"out of vocab", rl.Datum{ModelInput: rl.Tokens([]int{engine.BOS, 5000}), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{3, 4})}}, rl.CrossEntropy, "5000"},
		{"nan advantage", rl.Datum{ModelInput: good.ModelInput, LossFnInputs: map[string]rl.TensorData{
			rl.InputTargetTokens: good.LossFnInputs[rl.InputTargetTokens],
			rl.InputLogprobs:     rl.FloatTensor(make([]float64, n)),
			rl.InputAdvantages:   rl.FloatTensor([]float64{0, math.NaN(), 0, 0, 0}),
		}}, rl.ImportanceSampling, "NaN"},
	} {
		_, err := tr.ForwardBackward(ctx, []rl.Datum{tc.d}, rl.Loss{Name: tc.loss}).Wait(ctx)
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
	_, err = tr.ForwardBackward(ctx, []rl.Datum{good}, rl.Loss{Name: "nope"}).Wait(ctx)
	assert.ErrorContains(t, err, "nope")
	_, err = tr.SaveState(ctx, "x").Wait(ctx)
	assert.ErrorContains(t, err, "no checkpoint store")
	_, err = tr.SaveForSampler(ctx, "../x").Wait(ctx)
	assert.Error(t, err)

	require.NoError(t, tr.Close())
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	assert.ErrorIs(t, err, ErrClosed)

	smp, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	_, err = smp.Sample(ctx, rl.Tokens(make([]int, 40)), 1, rl.SamplingParams{MaxTokens: 1})
	assert.ErrorContains(t, err, "context")
	_, err = smp.Sample(ctx, rl.Tokens([]int{0}), 0, rl.SamplingParams{MaxTokens: 1})
	assert.ErrorContains(t, err, "num_samples")
	err = smp.Load(ctx, policy.Ref{URI: "tinker://t/sampler_weights/missing"})
	assert.ErrorContains(t, err, "no checkpoint store")
}

// TestCallsRunInTurn: calls queue behind a running one and return at once;
// a call whose ctx ends before its turn is skipped with the cause; a panic
// in a Do becomes that call's error and the trainer goes on; after Close,
// calls fail with ErrClosed.
func TestCallsRunInTurn(t *testing.T) {
	ctx := context.Background()
	tr, err := NewTrainer(tinyBase(t), TrainerOptions{})
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	hold := tr.Do(ctx, func(context.Context, *engine.Trainer[float32]) error {
		close(started)
		<-release
		return nil
	})
	<-started
	cause := errors.New("caller left")
	cctx, cancel := context.WithCancelCause(ctx)
	ran := false
	skipped := tr.Do(cctx, func(context.Context, *engine.Trainer[float32]) error { ran = true; return nil })
	boom := tr.Do(ctx, func(context.Context, *engine.Trainer[float32]) error { panic("boom") })
	step := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1e-3})
	cancel(cause)
	close(release)

	_, err = hold.Wait(ctx)
	require.NoError(t, err)
	_, err = skipped.Wait(ctx)
	require.ErrorIs(t, err, cause)
	assert.False(t, ran)
	_, err = boom.Wait(ctx)
	var rec *panics.ErrRecovered
	require.ErrorAs(t, err, &rec)
	assert.Equal(t, "boom", rec.Value)
	st, err := step.Wait(ctx)
	require.NoError(t, err, "the trainer goes on after a panic")
	assert.Equal(t, policy.Version(1), st.Version)

	require.NoError(t, tr.Close())
	_, err = tr.Do(ctx, func(context.Context, *engine.Trainer[float32]) error { return nil }).Wait(ctx)
	assert.ErrorIs(t, err, ErrClosed)
}
