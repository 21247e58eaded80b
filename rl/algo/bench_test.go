package algo_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
)

// BenchmarkBatch measures building one learner step's batch (16 groups of 8
// single-turn trajectories, 30 prompt and 20 action tokens) with the naive
// objective: the per-step orchestration cost GRPO adds on top of the
// trainer's work.
func BenchmarkBatch(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	groups := make([]rl.Group, 16)
	for gi := range groups {
		trajs := make([]rl.Trajectory, 8)
		for ti := range trajs {
			obs, act, lp := make([]int, 30), make([]int, 20), make([]float64, 20)
			for i := range act {
				act[i], lp[i] = rng.IntN(90), -rng.Float64()
			}
			trajs[ti] = rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens(obs), Action: act, Logprobs: lp, Reward: float64(ti % 2)}}}
		}
		groups[gi] = rl.Group{Trajectories: trajs}
	}
	g, err := algo.New(algo.Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Batch(context.Background(), nil, 0, groups); err != nil {
			b.Fatal(err)
		}
	}
}
