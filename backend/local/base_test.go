package local_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
)

// A *local.Trainer is GRPO's base model without either package naming the
// other in its code.
var _ algo.BaseModel = (*local.Trainer)(nil)

func baseTestModel(t *testing.T) *engine.Model[float32] {
	t.Helper()
	return enginetest.Model(t, 1, 32, 11)
}

func baseTestTrainer(t *testing.T, base *engine.Model[float32]) *local.Trainer {
	t.Helper()
	tr, err := local.NewTrainer(base, local.TrainerOptions{Run: "base"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// ceData returns n cross-entropy datums over random printable tokens.
func ceData(rng *rand.Rand, n int) []rl.Datum {
	data := make([]rl.Datum, n)
	for i := range data {
		seq := make([]int, 4+rng.IntN(8))
		for k := range seq {
			seq[k] = engine.FirstPrintable + rng.IntN(90)
		}
		data[i] = rl.Datum{ModelInput: rl.Tokens(seq[:len(seq)-1]),
			LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(seq[1:])}}
	}
	return data
}

// trainAway takes a few large cross-entropy steps so that the adapter no
// longer leaves the base unchanged.
func trainAway(t *testing.T, tr *local.Trainer, data []rl.Datum) {
	t.Helper()
	ctx := context.Background()
	for range 3 {
		_, err := tr.ForwardBackward(ctx, data, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
		require.NoError(t, err)
		_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 0.05}).Wait(ctx)
		require.NoError(t, err)
	}
}

func toEngine(data []rl.Datum) []engine.Example {
	ex := make([]engine.Example, len(data))
	for i, d := range data {
		tg := d.LossFnInputs[rl.InputTargetTokens].Ints
		targets := make([]int, len(tg))
		for k, v := range tg {
			targets[k] = int(v)
		}
		ex[i] = engine.Example{Input: d.ModelInput.AllTokens(), Targets: targets}
	}
	return ex
}

// TestBaseLogprobsIsTheBase trains an adapter away from the base and checks
// that BaseLogprobs still scores the base: exactly as the engine trainer's
// own BaseLogprobs on the same weights, as a fresh adapter's Forward, and
// as a sampler serving the base (algo.SamplerBase, prompt log-probs).
func TestBaseLogprobsIsTheBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := baseTestModel(t)
	tr := baseTestTrainer(t, base)
	data := ceData(rand.New(rand.NewPCG(2, 3)), 6)
	trainAway(t, tr, data)

	got, err := tr.BaseLogprobs(ctx, data)
	require.NoError(t, err)

	eng, err := engine.NewTrainer(base, engine.DefaultLoraConfig(), engine.TrainerOptions{})
	require.NoError(t, err)
	direct, err := eng.BaseLogprobs(ctx, toEngine(data))
	require.NoError(t, err)
	assert.Equal(t, direct, got, "the engine's BaseLogprobs on the same base")

	fresh, err := baseTestTrainer(t, base).Forward(ctx, data, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	cur, err := tr.Forward(ctx, data, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	smp, err := local.NewSampler(base, local.SamplerOptions{})
	require.NoError(t, err)
	fromSampler, err := algo.SamplerBase{Sampler: smp, Parallel: 3}.BaseLogprobs(ctx, data)
	require.NoError(t, err)

	require.Len(t, got, len(data))
	require.Len(t, fromSampler, len(data))
	moved := 0.0
	for i := range data {
		w := fresh.LossFnOutputs[i][rl.InputLogprobs].Floats
		require.Len(t, got[i], data[i].ModelInput.Len())
		assert.InDeltaSlice(t, w, got[i], 1e-6, "datum %d: a fresh adapter's Forward", i)
		assert.InDeltaSlice(t, w, fromSampler[i], 1e-4, "datum %d: sampler prompt log-probs", i)
		for k, p := range cur.LossFnOutputs[i][rl.InputLogprobs].Floats {
			moved = max(moved, math.Abs(p-w[k]))
		}
	}
	assert.Greater(t, moved, 1e-2, "the trained adapter changed the policy, so base ≠ current")

	// A sampler serving a trained version is not the base.
	ref, err := tr.SaveForSampler(ctx, "v3").Wait(ctx)
	require.NoError(t, err)
	smp2, err := local.NewSampler(base, local.SamplerOptions{Shelf: tr.Shelf()})
	require.NoError(t, err)
	require.NoError(t, smp2.Load(ctx, ref))
	_, err = algo.SamplerBase{Sampler: smp2}.BaseLogprobs(ctx, data)
	require.ErrorIs(t, err, algo.ErrNotBase)
	assert.ErrorContains(t, err, "datum 0")
}

func TestBaseLogprobsErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := baseTestTrainer(t, baseTestModel(t))
	datum := func(in, targets []int) []rl.Datum {
		return []rl.Datum{{ModelInput: rl.Tokens(in),
			LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(targets)}}}
	}

	_, err := tr.BaseLogprobs(ctx, datum([]int{1, 2}, []int{2}))
	require.ErrorContains(t, err, "datum 0: target_tokens has 1 values for 2 input tokens")

	_, err = tr.BaseLogprobs(ctx, []rl.Datum{{ModelInput: rl.Tokens([]int{1, 2})}})
	require.ErrorContains(t, err, `datum 0: loss_fn_inputs has no "target_tokens"`)

	long := make([]int, 33) // the model's context is 32
	_, err = tr.BaseLogprobs(ctx, datum(long, long))
	require.ErrorIs(t, err, engine.ErrInput)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = tr.BaseLogprobs(cancelled, datum([]int{1, 2}, []int{2, 3}))
	require.ErrorIs(t, err, context.Canceled)

	out, err := tr.BaseLogprobs(ctx, datum([]int{1, 2}, []int{2, 3}))
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Len(t, out[0], 2)

	closed := baseTestTrainer(t, baseTestModel(t))
	require.NoError(t, closed.Close())
	_, err = closed.BaseLogprobs(ctx, datum([]int{1, 2}, []int{2, 3}))
	require.ErrorIs(t, err, local.ErrClosed)
}

// klSample is what the naive reference knows of one datum: its observation
// length and its sampler log-probs.
type klSample struct {
	obs int
	mu  []float64
}

// klGroups makes groups of single-turn trajectories with distinct returns.
func klGroups(rng *rand.Rand) ([]rl.Group, []klSample) {
	groups := make([]rl.Group, 3)
	var samples []klSample
	for gi := range groups {
		trajs := make([]rl.Trajectory, 4)
		for ti := range trajs {
			obs := make([]int, 2+rng.IntN(4))
			for i := range obs {
				obs[i] = engine.FirstPrintable + rng.IntN(90)
			}
			act := make([]int, 2+rng.IntN(5))
			mu := make([]float64, len(act))
			for i := range act {
				act[i] = engine.FirstPrintable + rng.IntN(90)
				mu[i] = -math.Log(engine.VocabSize) + 2*rng.Float64() - 1
			}
			trajs[ti] = rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens(obs), Action: act, Logprobs: mu,
				Reward: float64(ti) + rng.Float64()/2}}}
			samples = append(samples, klSample{obs: len(obs), mu: mu})
		}
		groups[gi] = rl.Group{ID: uint64(gi), Trajectories: trajs}
	}
	return groups, samples
}

// TestTrainerServesGRPOsKLPenalty runs GRPO's KL penalty with the trainer
// as its base model and checks the shaping against tinker-cookbook's
// incorporate_kl_penalty written out, with base log-probs from a fresh
// adapter's Forward: every action token's advantage gains the discounted
// sum of β·(d̄ − d_k) over the tokens from it on, d = μ − log π_base.
func TestTrainerServesGRPOsKLPenalty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := baseTestModel(t)
	tr := baseTestTrainer(t, base)
	groups, samples := klGroups(rand.New(rand.NewPCG(4, 5)))
	const beta, gamma = 0.3, 0.9
	plain, err := algo.New(algo.Config{}, nil)
	require.NoError(t, err)
	b0, err := plain.Batch(ctx, tr, 0, groups)
	require.NoError(t, err)
	g, err := algo.New(algo.Config{KLCoef: beta, KLDiscount: gamma}, tr)
	require.NoError(t, err)
	b, err := g.Batch(ctx, tr, 0, groups)
	require.NoError(t, err)
	require.Len(t, b.Datums, len(samples))
	require.Len(t, b0.Datums, len(samples))

	out, err := baseTestTrainer(t, base).Forward(ctx, b.Datums, rl.Loss{Name: rl.ImportanceSampling}).Wait(ctx)
	require.NoError(t, err)
	var sum, n float64
	diffs := make([][]float64, len(samples))
	for i, s := range samples {
		bl := out.LossFnOutputs[i][rl.InputLogprobs].Floats[s.obs-1:]
		for j := range s.mu {
			d := s.mu[j] - bl[j]
			diffs[i] = append(diffs[i], d)
			sum += d
			n++
		}
	}
	avg := sum / n
	assert.InDelta(t, avg, b.Metrics["kl:policy_base"], 1e-6)
	for i, s := range samples {
		got := b.Datums[i].LossFnInputs[rl.InputAdvantages].Floats
		plainAdv := b0.Datums[i].LossFnInputs[rl.InputAdvantages].Floats
		for j := range s.mu {
			var pen, f float64 = 0, 1
			for k := j; k < len(s.mu); k++ {
				pen += f * beta * (avg - diffs[i][k])
				f *= gamma
			}
			assert.InDelta(t, plainAdv[s.obs-1+j]+pen, got[s.obs-1+j], 1e-6, "datum %d action token %d", i, j)
		}
		for k := 0; k < s.obs-1; k++ {
			assert.Zero(t, got[k], "datum %d observation position %d", i, k)
		}
	}
	// The shaped batch trains.
	_, err = tr.ForwardBackward(ctx, b.Datums, b.Loss).Wait(ctx)
	require.NoError(t, err)
}
