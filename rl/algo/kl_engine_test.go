package algo_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/rl/algo/localbase"
)

// trainAway takes a few large steps so that the adapter no longer leaves
// the base unchanged.
func trainAway(t *testing.T, tr *local.Trainer, b rl.Batch) {
	t.Helper()
	ctx := context.Background()
	for range 3 {
		_, err := tr.ForwardBackward(ctx, b.Datums, b.Loss).Wait(ctx)
		require.NoError(t, err)
		_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 0.05}).Wait(ctx)
		require.NoError(t, err)
	}
}

func TestBaseModelsAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := tinyBase(t)
	tr := newTrainer(t, base)
	groups, _ := offPolicyGroups(rand.New(rand.NewPCG(2, 3)))
	g, err := algo.New(algo.Config{}, nil)
	require.NoError(t, err)
	b, err := g.Batch(ctx, tr, 0, groups)
	require.NoError(t, err)
	trainAway(t, tr, b)

	// Reference: a fresh adapter leaves the base unchanged.
	fresh := newTrainer(t, base)
	want, err := fresh.Forward(ctx, b.Datums, b.Loss).Wait(ctx)
	require.NoError(t, err)
	cur, err := tr.Forward(ctx, b.Datums, b.Loss).Wait(ctx)
	require.NoError(t, err)

	fromTrainer, err := localbase.Base{Trainer: tr}.BaseLogprobs(ctx, b.Datums)
	require.NoError(t, err)
	smp, err := local.NewSampler(base, local.SamplerOptions{})
	require.NoError(t, err)
	fromSampler, err := algo.SamplerBase{Sampler: smp, Parallel: 3}.BaseLogprobs(ctx, b.Datums)
	require.NoError(t, err)

	require.Len(t, fromTrainer, len(b.Datums))
	require.Len(t, fromSampler, len(b.Datums))
	moved := 0.0
	for i := range b.Datums {
		w := want.LossFnOutputs[i][rl.InputLogprobs].Floats
		assert.InDeltaSlice(t, w, fromTrainer[i], 1e-6, "datum %d: localbase", i)
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
	_, err = algo.SamplerBase{Sampler: smp2}.BaseLogprobs(ctx, b.Datums)
	require.ErrorIs(t, err, algo.ErrNotBase)
	assert.ErrorContains(t, err, "datum 0")
}

func TestGRPOWithKLPenalty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := tinyBase(t)
	tr := newTrainer(t, base)
	groups, samples := offPolicyGroups(rand.New(rand.NewPCG(4, 5)))
	const beta, gamma = 0.3, 0.9
	g, err := algo.New(algo.Config{KLCoef: beta, KLDiscount: gamma}, localbase.Base{Trainer: tr})
	require.NoError(t, err)
	b, err := g.Batch(ctx, tr, 0, groups)
	require.NoError(t, err)

	// Naive: base log-probs from a fresh trainer, tinker-cookbook's shaping.
	out, err := newTrainer(t, base).Forward(ctx, b.Datums, rl.Loss{Name: rl.ImportanceSampling}).Wait(ctx)
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
		for j := range s.mu {
			var pen, f float64 = 0, 1
			for k := j; k < len(s.mu); k++ {
				pen += f * beta * (avg - diffs[i][k])
				f *= gamma
			}
			assert.InDelta(t, s.adv+pen, got[s.obs-1+j], 1e-6, "datum %d action token %d", i, j)
		}
		for k := 0; k < s.obs-1; k++ {
			assert.Zero(t, got[k], "datum %d observation position %d", i, k)
		}
	}
	// The shaped batch trains.
	_, err = tr.ForwardBackward(ctx, b.Datums, b.Loss).Wait(ctx)
	require.NoError(t, err)
}
