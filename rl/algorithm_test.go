package rl

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveDatum builds a transition's datum the obvious way.
func naiveDatum(tr Transition, adv float64) (Datum, Span) {
	full := append(tr.Observation.AllTokens(), tr.Action...)
	n := len(full) - 1
	obs := tr.Observation.Len()
	tg := make([]int, n)
	lp := make([]float64, n)
	ad := make([]float64, n)
	for p := range n {
		tg[p] = full[p+1]
		if a := p + 1 - obs; a >= 0 { // target p is action token a
			lp[p] = tr.Logprobs[a]
			ad[p] = adv
		}
	}
	return Datum{ModelInput: Tokens(full[:n]), LossFnInputs: map[string]TensorData{
		InputTargetTokens: IntTensor(tg), InputLogprobs: FloatTensor(lp), InputAdvantages: FloatTensor(ad)}}, Span{Start: max(obs-1, 0), End: n}
}

func randomGroups(rng *rand.Rand) []Group {
	groups := make([]Group, 1+rng.IntN(3))
	for gi := range groups {
		trajs := make([]Trajectory, 1+rng.IntN(4))
		for ti := range trajs {
			turns := make([]Transition, 1+rng.IntN(2))
			for k := range turns {
				var chunks []Chunk
				for range rng.IntN(3) {
					toks := make([]int, rng.IntN(4))
					if rng.IntN(4) == 0 {
						toks = make([]int, rng.IntN(60)) // past the short-datum path
					}
					for i := range toks {
						toks[i] = rng.IntN(100)
					}
					chunks = append(chunks, Chunk{Tokens: toks})
				}
				act := make([]int, 1+rng.IntN(5))
				if rng.IntN(4) == 0 {
					act = make([]int, 1+rng.IntN(40))
				}
				lps := make([]float64, len(act))
				for i := range act {
					act[i], lps[i] = rng.IntN(100), -rng.Float64()
				}
				turns[k] = Transition{Observation: ModelInput{Chunks: chunks}, Action: act, Logprobs: lps, Reward: float64(rng.IntN(3))}
			}
			trajs[ti] = Trajectory{Transitions: turns}
		}
		groups[gi] = Group{Trajectories: trajs}
	}
	return groups
}

func flat(d Datum) ([]int, []int64, []float64, []float64) {
	in := d.LossFnInputs
	return d.ModelInput.AllTokens(), in[InputTargetTokens].Ints, in[InputLogprobs].Floats, in[InputAdvantages].Floats
}

// TestGroupRelativeMatchesNaive compares the allocation-free datum builder
// with the naive one over random multi-turn groups, reusing one
// GroupRelative across calls so that reused memory is exercised.
func TestGroupRelativeMatchesNaive(t *testing.T) {
	t.Parallel()
	for _, norm := range []bool{false, true} {
		a := &GroupRelative{NormalizeStd: norm}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 300 {
			groups := randomGroups(rng)
			b, err := a.Batch(context.Background(), nil, 0, groups)
			require.NoError(t, err)
			assert.Equal(t, ImportanceSampling, b.Loss.Name)
			var want []Datum
			var spans []Span
			for _, g := range groups {
				var mean, sq float64
				for _, tr := range g.Trajectories {
					mean += tr.Return()
				}
				mean /= float64(len(g.Trajectories))
				for _, tr := range g.Trajectories {
					sq += (tr.Return() - mean) * (tr.Return() - mean)
				}
				std := math.Sqrt(sq / float64(len(g.Trajectories)))
				for _, tr := range g.Trajectories {
					adv := tr.Return() - mean
					if norm {
						adv /= std + 1e-6
					}
					for _, x := range tr.Transitions {
						if x.Observation.Len()+len(x.Action) < 2 {
							continue
						}
						d, sp := naiveDatum(x, adv)
						sp.Datum = len(want)
						want = append(want, d)
						spans = append(spans, sp)
					}
				}
			}
			require.Len(t, b.Datums, len(want))
			if len(spans) > 0 || len(b.Actions) > 0 {
				assert.Equal(t, spans, b.Actions)
			}
			for i := range want {
				gt, gtg, glp, gad := flat(b.Datums[i])
				wt, wtg, wlp, wad := flat(want[i])
				require.Equal(t, wt, gt, "datum %d tokens", i)
				require.Equal(t, wtg, gtg, "datum %d targets", i)
				require.Equal(t, wlp, glp, "datum %d logprobs", i)
				require.InDeltaSlice(t, wad, gad, 1e-12, "datum %d advantages", i)
			}
		}
	}
}

func TestGroupRelativeSkipUniformAndErrors(t *testing.T) {
	t.Parallel()
	tr := func(r float64) Trajectory {
		return Trajectory{Transitions: []Transition{{Observation: Tokens([]int{1}), Action: []int{2}, Logprobs: []float64{-1}, Reward: r}}}
	}
	a := &GroupRelative{SkipUniform: true}
	b, err := a.Batch(context.Background(), nil, 0, []Group{
		{Trajectories: []Trajectory{tr(1), tr(1)}},
		{Trajectories: []Trajectory{tr(0), tr(1)}},
	})
	require.NoError(t, err)
	assert.Len(t, b.Datums, 2, "the uniform group is skipped")
	assert.Equal(t, 1.0, b.Metrics["groups:skipped_uniform"])
	assert.InDelta(t, 0, b.Metrics["advantage:mean"], 1e-12, "group-relative advantages average to zero")

	bad := tr(1)
	bad.Transitions[0].Logprobs = nil
	_, err = a.Batch(context.Background(), nil, 0, []Group{{Trajectories: []Trajectory{tr(0), bad}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 action tokens but 0 logprobs")
}
