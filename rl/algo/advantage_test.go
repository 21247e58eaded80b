package algo

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// naiveAdvantages is the textbook formula, written out.
func naiveAdvantages(rets []float64, norm bool) ([]float64, bool) {
	n := float64(len(rets))
	mean := 0.0
	for _, r := range rets {
		mean += r / n
	}
	vari := 0.0
	for _, r := range rets {
		vari += (r - mean) * (r - mean) / n
	}
	out := make([]float64, len(rets))
	same := true
	for i, r := range rets {
		same = same && r == rets[0]
		out[i] = r - mean
		if norm {
			out[i] /= math.Sqrt(vari) + 1e-6
		}
	}
	if same {
		clear(out)
	}
	return out, same
}

func TestGroupAdvantagesMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var buf []float64
	for range 500 {
		rets := make([]float64, 1+rng.IntN(8))
		for i := range rets {
			rets[i] = float64(rng.IntN(3)) * 0.5 // many ties and uniform groups
		}
		for _, norm := range []bool{false, true} {
			want, wantU := naiveAdvantages(rets, norm)
			var got []float64
			var u bool
			got, u = GroupAdvantages(buf, rets, norm)
			buf = got
			assert.Equal(t, wantU, u, "returns %v", rets)
			assert.InDeltaSlice(t, want, got, 1e-9, "returns %v norm %v", rets, norm)
			if !u {
				var s float64
				for _, a := range got {
					s += a
				}
				assert.InDelta(t, 0, s, 1e-9, "advantages of a group sum to zero")
			}
		}
	}
	adv, u := GroupAdvantages(nil, nil, true)
	assert.True(t, u)
	assert.Empty(t, adv)
}

func TestBatchAdvantageMetrics(t *testing.T) {
	t.Parallel()
	tr := func(r float64, n int) rl.Trajectory {
		act := make([]int, n)
		return rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens([]int{1, 2}), Action: act, Logprobs: make([]float64, n), Reward: r}}}
	}
	g, err := New(Config{}, nil)
	require.NoError(t, err)
	// Group 1: returns 0 and 1 → advantages ∓0.5 on 1 and 3 action tokens.
	// Group 2: uniform, filtered.
	b, err := g.Batch(context.Background(), nil, 0, []rl.Group{
		{Trajectories: []rl.Trajectory{tr(0, 1), tr(1, 3)}},
		{Trajectories: []rl.Trajectory{tr(1, 2), tr(1, 2)}},
	})
	require.NoError(t, err)
	require.Len(t, b.Datums, 2)
	advs := []float64{-0.5, 0.5, 0.5, 0.5}
	var mean, sq, abs float64
	for _, a := range advs {
		mean += a / 4
		abs += math.Abs(a) / 4
	}
	for _, a := range advs {
		sq += (a - mean) * (a - mean) / 4
	}
	assert.InDelta(t, mean, b.Metrics["advantage:mean"], 1e-12)
	assert.InDelta(t, abs, b.Metrics["advantage:abs_mean"], 1e-12)
	assert.InDelta(t, math.Sqrt(sq), b.Metrics["advantage:std"], 1e-12)
	assert.Equal(t, -0.5, b.Metrics["advantage:min"])
	assert.Equal(t, 0.5, b.Metrics["advantage:max"])
	assert.Equal(t, 4.0, b.Metrics["tokens:action"])
	assert.Equal(t, 1.0, b.Metrics["groups:filtered_uniform"])
}

func TestBatchErrors(t *testing.T) {
	t.Parallel()
	g, err := New(Config{}, nil)
	require.NoError(t, err)
	good := rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens([]int{1}), Action: []int{2}, Logprobs: []float64{-1}}}}
	bad := rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens([]int{1}), Action: []int{2, 3}, Logprobs: []float64{-1}, Reward: 1}}}
	_, err = g.Batch(context.Background(), nil, 0, []rl.Group{{ID: 7, Trajectories: []rl.Trajectory{good, bad}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "group 0 (id 7) trajectory 1 turn 0: 2 action tokens but 1 logprobs")

	dec, err := New(Config{Objective: Decoupled}, nil)
	require.NoError(t, err)
	good.Transitions[0].Reward = 1
	bad.Transitions[0].Logprobs = []float64{-1, -1}
	_, err = dec.Batch(context.Background(), nil, 0, []rl.Group{{Trajectories: []rl.Trajectory{good, bad, {}}}})
	require.ErrorContains(t, err, "needs the trainer")

	_, err = New(Config{KLCoef: 0.1}, nil)
	require.ErrorIs(t, err, ErrNoBaseModel)

	b, err := g.Batch(context.Background(), nil, 0, nil)
	require.NoError(t, err)
	assert.Empty(t, b.Datums)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Config{}.Validate())
	assert.Equal(t, Config{Objective: Naive, ClipEpsLow: 0.2, ClipEpsHigh: 0.2, TruncateAt: 2, BehaviourCap: 5}, Config{}.WithDefaults())
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Objective: "grpo"}, `objective "grpo" unknown; allowed: naive, ppo, tis, decoupled`},
		{Config{ClipEpsLow: 1}, "ClipEpsLow"},
		{Config{ClipEpsLow: -0.1}, "ClipEpsLow"},
		{Config{ClipEpsHigh: math.Inf(1)}, "ClipEpsHigh"},
		{Config{ClipEpsHigh: -1}, "ClipEpsHigh"},
		{Config{TruncateAt: -2}, "TruncateAt"},
		{Config{BehaviourCap: 0.5}, "BehaviourCap"},
		{Config{BehaviourCap: math.NaN()}, "BehaviourCap"},
		{Config{KLCoef: -1}, "KLCoef"},
		{Config{KLDiscount: 1.5}, "KLDiscount"},
	} {
		err := tc.cfg.Validate()
		require.ErrorIs(t, err, ErrConfig, "%+v", tc.cfg)
		assert.Contains(t, err.Error(), tc.field)
		_, err = New(tc.cfg, nil)
		require.ErrorIs(t, err, ErrConfig)
	}
	require.NoError(t, Config{BehaviourCap: -1, Objective: Decoupled}.Validate())

	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"objective":"tis","truncate_at":1.5}`), &c))
	assert.Equal(t, Config{Objective: TIS, TruncateAt: 1.5}, c)
	err := json.Unmarshal([]byte(`{"objective":"TIS"}`), &c)
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "allowed: naive, ppo, tis, decoupled")
	for _, o := range Objectives() {
		got, err := ParseObjective(string(o))
		require.NoError(t, err)
		assert.Equal(t, o, got)
	}
}
