package algo

import (
	"context"
	"testing"

	"github.com/tandemrl/tandem/rl"
)

// smallGroups is the batch of the pipeline benchmark's shape: 64 groups of
// 8 single-turn trajectories, 3 prompt and 4 action tokens, the prompt
// shared by the group as rollouts share it, returns alternating 0 and 1.
func smallGroups() []rl.Group {
	groups := make([]rl.Group, 64)
	act, lps := []int{5, 6, 7, 8}, []float64{-1, -2, -3, -4}
	for gi := range groups {
		trajs := make([]rl.Trajectory, 8)
		trans := make([]rl.Transition, 8)
		prompt := rl.Tokens([]int{gi, 1, 2})
		for ti := range trajs {
			trans[ti] = rl.Transition{Observation: prompt, Action: act, Logprobs: lps, Reward: float64(ti & 1)}
			trajs[ti] = rl.Trajectory{Transitions: trans[ti : ti+1]}
		}
		groups[gi] = rl.Group{Trajectories: trajs}
	}
	return groups
}

// BenchmarkGRPOSmall builds the batch of smallGroups with the naive
// objective: the learner's per-sample cost in the pipeline benchmark's
// orchestration-overhead run (rl/loop's default algorithm).
func BenchmarkGRPOSmall(b *testing.B) {
	groups := smallGroups()
	g, err := New(Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	samples := 0
	for _, grp := range groups {
		samples += len(grp.Trajectories)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Batch(context.Background(), nil, 0, groups); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*samples), "ns/sample")
}
