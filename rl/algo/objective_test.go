package algo_test

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
)

func tinyBase(t *testing.T) *engine.Model[float32] {
	t.Helper()
	return enginetest.Model(t, 1, 32, 11)
}

func newTrainer(t *testing.T, base *engine.Model[float32]) *local.Trainer {
	t.Helper()
	tr, err := local.NewTrainer(base, local.TrainerOptions{Run: "algo"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// sample is what the naive references know of one datum: the transition's
// observation length, its sampler log-probs and its group advantage.
type sample struct {
	obs int
	mu  []float64
	adv float64
}

// offPolicyGroups makes groups of single-turn trajectories with distinct
// returns, whose sampler log-probs μ lie within ±1 of ln(1/V), about where a
// fresh tiny model puts p, so that r = exp(p − μ) spans roughly [0.35, 3].
func offPolicyGroups(rng *rand.Rand) ([]rl.Group, []sample) {
	groups := make([]rl.Group, 3)
	var samples []sample
	for gi := range groups {
		trajs := make([]rl.Trajectory, 4)
		rets := make([]float64, len(trajs))
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
			rets[ti] = float64(ti) + rng.Float64()/2
			trajs[ti] = rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens(obs), Action: act, Logprobs: mu, Reward: rets[ti]}}}
		}
		adv, _ := algo.GroupAdvantages(nil, rets, false)
		for ti := range trajs {
			tr := trajs[ti].Transitions[0]
			samples = append(samples, sample{obs: tr.Observation.Len(), mu: tr.Logprobs, adv: adv[ti]})
		}
		groups[gi] = rl.Group{ID: uint64(gi), Trajectories: trajs}
	}
	return groups, samples
}

// tokenRef is a naive per-token reference in float64: the loss of the
// action token at datum i, action index j, given the trainer's log-prob p,
// and its derivative with respect to p.
type tokenRef func(i, j int, p float64) (loss, dloss float64)

// numDeriv is a central finite difference in float64.
func numDeriv(f func(p float64) float64, p float64) float64 {
	const h = 1e-6
	return (f(p+h) - f(p-h)) / (2 * h)
}

// checkAgainst runs the batch's loss on the trainer and compares it with
// ref: the summed loss, and the gradient, by cancellation. The trainer's
// gradient of the batch is Σ ℓ'(p_t)·∇p_t; a cross_entropy batch over the
// same tokens with weights w_t = ref'(p_t) adds −Σ w_t·∇p_t, so the sum is
// zero exactly when the engine's per-token derivatives equal the
// reference's. The optimizer step reports the norm of what accumulated.
// It returns the summed losses of the engine and the reference, and the
// relative residual ‖G_batch − G_ref‖/‖G_batch‖.
func checkAgainst(t *testing.T, tr *local.Trainer, b rl.Batch, samples []sample, ref tokenRef) (engineLoss, refLoss, residual float64) {
	t.Helper()
	ctx := context.Background()
	tiny := rl.AdamParams{LearningRate: 1e-30}
	out, err := tr.ForwardBackward(ctx, b.Datums, b.Loss).Wait(ctx)
	require.NoError(t, err)
	st, err := tr.OptimStep(ctx, tiny).Wait(ctx)
	require.NoError(t, err)
	full := st.Metrics["grad_norm"]
	require.Greater(t, full, 0.0)

	var lossRef float64
	ce := make([]rl.Datum, len(b.Datums))
	for i, d := range b.Datums {
		p := out.LossFnOutputs[i][rl.InputLogprobs].Floats
		w := make([]float64, len(p))
		first := samples[i].obs - 1
		for k := range p {
			if j := k - first; j >= 0 {
				l, dl := ref(i, j, p[k])
				lossRef += l
				w[k] = dl
			}
		}
		ce[i] = rl.Datum{ModelInput: d.ModelInput, LossFnInputs: map[string]rl.TensorData{
			rl.InputTargetTokens: d.LossFnInputs[rl.InputTargetTokens],
			rl.InputWeights:      rl.FloatTensor(w),
		}}
	}
	_, err = tr.ForwardBackward(ctx, b.Datums, b.Loss).Wait(ctx)
	require.NoError(t, err)
	_, err = tr.ForwardBackward(ctx, ce, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	st, err = tr.OptimStep(ctx, tiny).Wait(ctx)
	require.NoError(t, err)
	return out.Metrics["loss:sum"], lossRef, st.Metrics["grad_norm"] / full
}

const gradTol = 1e-4 // float32 accumulation; a wrong formula gives O(1)

func TestObjectivesMatchNaiveReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const C, lo, hi = 1.5, 0.8, 1.2
	ratio := func(i, j int, p float64, s []sample) float64 { return math.Exp(p - s[i].mu[j]) }
	refs := map[algo.Objective]func(s []sample) tokenRef{
		algo.Naive: func(s []sample) tokenRef {
			return func(i, j int, p float64) (float64, float64) {
				l := func(p float64) float64 { return -ratio(i, j, p, s) * s[i].adv }
				return l(p), numDeriv(l, p)
			}
		},
		algo.PPO: func(s []sample) tokenRef {
			return func(i, j int, p float64) (float64, float64) {
				l := func(p float64) float64 {
					r, a := ratio(i, j, p, s), s[i].adv
					return -min(r*a, min(max(r, lo), hi)*a)
				}
				return l(p), numDeriv(l, p)
			}
		},
		// TIS is defined by its gradient, min(r, C)·A·∇p; its surrogate
		// value is −min(r, C)·A·p with the factor held fixed.
		algo.TIS: func(s []sample) tokenRef {
			return func(i, j int, p float64) (float64, float64) {
				c := min(ratio(i, j, p, s), C) * s[i].adv
				return -c * p, -c
			}
		},
	}
	for obj, mk := range refs {
		t.Run(string(obj), func(t *testing.T) {
			t.Parallel()
			tr := newTrainer(t, tinyBase(t))
			groups, samples := offPolicyGroups(rand.New(rand.NewPCG(1, uint64(len(obj)))))
			g, err := algo.New(algo.Config{Objective: obj, TruncateAt: C}, nil)
			require.NoError(t, err)
			b, err := g.Batch(ctx, tr, 0, groups)
			require.NoError(t, err)
			require.Len(t, b.Datums, len(samples))

			got, want, res := checkAgainst(t, tr, b, samples, mk(samples))
			assert.InDelta(t, want, got, 1e-6*(1+math.Abs(want)), "summed loss")
			assert.Less(t, res, gradTol, "gradient residual of %s against its reference", obj)
			t.Logf("%s: loss %.6g (reference %.6g), gradient residual %.2g", obj, got, want, res)

			// The check can fail: each other objective's reference
			// leaves a large residual on this batch.
			for other, mk2 := range refs {
				if other != obj {
					_, _, wrong := checkAgainst(t, tr, b, samples, mk2(samples))
					assert.Greater(t, wrong, 100*gradTol, "%s batch against the %s reference", obj, other)
					t.Logf("%s batch against the %s reference: residual %.2g", obj, other, wrong)
				}
			}

			// The correction acted on some tokens.
			out, err := tr.Forward(ctx, b.Datums, b.Loss).Wait(ctx)
			require.NoError(t, err)
			rm, err := g.RatioMetrics(out)
			require.NoError(t, err)
			switch obj {
			case algo.PPO:
				assert.Greater(t, rm["ratio:clipped_frac"], 0.05)
			case algo.TIS:
				assert.Greater(t, rm["ratio:truncated_frac"], 0.05)
			}
			assert.Greater(t, rm["ratio:max"], C)
			t.Logf("%s ratio metrics %v", obj, rm)
		})
	}
}

// countingTrainer counts the Forward calls it passes on.
type countingTrainer struct {
	rl.Trainer
	forwards atomic.Int64
}

func (c *countingTrainer) Forward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	c.forwards.Add(1)
	return c.Trainer.Forward(ctx, data, loss)
}

func TestDecoupledMatchesNaiveReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lo, hi, wcap = 0.8, 1.2, 1.5
	tr := newTrainer(t, tinyBase(t))
	groups, samples := offPolicyGroups(rand.New(rand.NewPCG(9, 9)))

	// π_prox, computed independently: a forward pass at the current weights
	// over the naive objective's datums.
	naive, err := algo.New(algo.Config{}, nil)
	require.NoError(t, err)
	nb, err := naive.Batch(ctx, tr, 0, groups)
	require.NoError(t, err)
	pout, err := tr.Forward(ctx, nb.Datums, nb.Loss).Wait(ctx)
	require.NoError(t, err)
	prox := make([][]float64, len(samples))
	for i, s := range samples {
		prox[i] = pout.LossFnOutputs[i][rl.InputLogprobs].Floats[s.obs-1:]
	}

	ct := &countingTrainer{Trainer: tr}
	g, err := algo.New(algo.Config{Objective: algo.Decoupled, BehaviourCap: wcap}, nil)
	require.NoError(t, err)
	b, err := g.Batch(ctx, ct, 0, groups)
	require.NoError(t, err)
	assert.Equal(t, int64(1), ct.forwards.Load(), "decoupled costs exactly one extra forward pass per batch")
	assert.Empty(t, b.Actions, "the logprobs inputs are π_prox, not sampler log-probs")
	assert.Greater(t, b.Metrics["decoupled:capped_frac"], 0.0)
	assert.Greater(t, b.Metrics["decoupled:sampler_gap"], 0.0)

	// Move the policy away from π_prox so that the clip binds.
	_, err = tr.ForwardBackward(ctx, nb.Datums, nb.Loss).Wait(ctx)
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 0.05}).Wait(ctx)
	require.NoError(t, err)

	capped, clipped := 0, 0
	ref := func(i, j int, p float64) (float64, float64) {
		s := samples[i]
		w := math.Exp(prox[i][j] - s.mu[j])
		if w > wcap {
			w = 0 // AReaL filters the token out
		}
		l := func(p float64) float64 {
			r := math.Exp(p - prox[i][j])
			return -w * min(r*s.adv, min(max(r, lo), hi)*s.adv)
		}
		return l(p), numDeriv(l, p)
	}
	for i, s := range samples {
		for j := range s.mu {
			if math.Exp(prox[i][j]-s.mu[j]) > wcap {
				capped++
			}
		}
	}
	got, want, res := checkAgainst(t, tr, b, samples, ref)
	assert.InDelta(t, want, got, 1e-6*(1+math.Abs(want)), "summed loss")
	assert.Less(t, res, gradTol)
	t.Logf("decoupled: loss %.6g (reference %.6g), gradient residual %.2g; batch metrics %v", got, want, res, b.Metrics)
	assert.Greater(t, capped, 0, "the behaviour cap filtered some tokens")

	out, err := tr.Forward(ctx, b.Datums, b.Loss).Wait(ctx)
	require.NoError(t, err)
	rm, err := g.RatioMetrics(out)
	require.NoError(t, err)
	for i, s := range samples {
		p := out.LossFnOutputs[i][rl.InputLogprobs].Floats[s.obs-1:]
		for j := range p {
			if math.Exp(prox[i][j]-s.mu[j]) > wcap {
				continue // filtered: no gradient to clip
			}
			r := math.Exp(p[j] - prox[i][j])
			if (s.adv > 0 && r > hi) || (s.adv < 0 && r < lo) {
				clipped++
			}
		}
	}
	assert.Greater(t, clipped, 0, "the clip against π_prox binds after the policy moved")
	n := 0
	for _, s := range samples {
		n += len(s.mu)
	}
	assert.InDelta(t, float64(clipped)/float64(n), rm["ratio:clipped_frac"], 1e-12)
	t.Logf("decoupled after a step: %d of %d tokens capped, %d clipped; ratio metrics %v", capped, n, clipped, rm)
}

// TestDecoupledPrepareSpansSubsteps checks AReaL's form with substeps: one
// forward pass for the whole learner step, and the second substep clips
// against the policy of the step's start, not the one after the first
// optimizer step.
func TestDecoupledPrepareSpansSubsteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTrainer(t, tinyBase(t))
	groups, samples := offPolicyGroups(rand.New(rand.NewPCG(6, 6)))

	naive, err := algo.New(algo.Config{}, nil)
	require.NoError(t, err)
	nb, err := naive.Batch(ctx, tr, 0, groups)
	require.NoError(t, err)
	start, err := tr.Forward(ctx, nb.Datums, nb.Loss).Wait(ctx)
	require.NoError(t, err)

	ct := &countingTrainer{Trainer: tr}
	g, err := algo.New(algo.Config{Objective: algo.Decoupled, BehaviourCap: -1}, nil)
	require.NoError(t, err)
	require.NoError(t, g.Prepare(ctx, ct, 0, groups))
	assert.Equal(t, int64(1), ct.forwards.Load())

	// Substep 1: the first group; then an optimizer step.
	b1, err := g.Batch(ctx, ct, 0, groups[:1])
	require.NoError(t, err)
	assert.Equal(t, 1.0, b1.Metrics["decoupled:prepared"])
	_, err = tr.ForwardBackward(ctx, b1.Datums, b1.Loss).Wait(ctx)
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 0.05}).Wait(ctx)
	require.NoError(t, err)

	// Substep 2: the other groups, still against the step's start.
	b2, err := g.Batch(ctx, ct, 1, groups[1:])
	require.NoError(t, err)
	assert.Equal(t, int64(1), ct.forwards.Load(), "one forward pass for the whole learner step")
	now, err := tr.Forward(ctx, b2.Datums, b2.Loss).Wait(ctx)
	require.NoError(t, err)
	per := len(groups[0].Trajectories)
	moved := 0.0
	for i, d := range b2.Datums {
		s := samples[per+i]
		want := start.LossFnOutputs[per+i][rl.InputLogprobs].Floats
		got := d.LossFnInputs[rl.InputLogprobs].Floats
		cur := now.LossFnOutputs[i][rl.InputLogprobs].Floats
		for k := s.obs - 1; k < len(got); k++ {
			assert.Equal(t, want[k], got[k], "datum %d position %d holds π_prox of the step's start", i, k)
			moved = max(moved, math.Abs(cur[k]-got[k]))
		}
		adv := d.LossFnInputs[rl.InputAdvantages].Floats
		for j, mu := range s.mu {
			assert.InDelta(t, s.adv*math.Exp(want[s.obs-1+j]-mu), adv[s.obs-1+j], 1e-12)
		}
	}
	assert.Greater(t, moved, 1e-3, "the policy moved after the first substep")

	// The stored log-probs are consumed: a repeated Batch runs its own
	// forward pass.
	_, err = g.Batch(ctx, ct, 1, groups[1:])
	require.NoError(t, err)
	assert.Equal(t, int64(2), ct.forwards.Load())
	// Other objectives ignore Prepare.
	require.NoError(t, naive.Prepare(ctx, nil, 0, groups))
}
