package rl

import (
	"context"
	"testing"
)

// BenchmarkGroupRelativeSmall builds the batch of the pipeline benchmark's
// shape (64 groups of 8, 3 prompt and 4 action tokens): the learner's
// per-sample cost in the orchestration-overhead run.
func BenchmarkGroupRelativeSmall(b *testing.B) {
	groups := make([]Group, 64)
	act, lps := []int{5, 6, 7, 8}, []float64{-1, -2, -3, -4}
	for gi := range groups {
		trajs := make([]Trajectory, 8)
		trans := make([]Transition, 8)
		prompt := Tokens([]int{gi, 1, 2}) // shared by the group, as rollouts do
		for ti := range trajs {
			trans[ti] = Transition{Observation: prompt, Action: act, Logprobs: lps, Reward: float64(ti & 1)}
			trajs[ti] = Trajectory{Transitions: trans[ti : ti+1]}
		}
		groups[gi] = Group{Trajectories: trajs}
	}
	var a GroupRelative
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Batch(context.Background(), nil, 0, groups); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*512), "ns/sample")
}
