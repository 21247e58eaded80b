package rollout

import (
	"context"
	"testing"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
)

// BenchmarkSingleTurn measures one group of 8 against a zero-latency
// static sampler: the Runner's own cost per group.
func BenchmarkSingleTurn(b *testing.B) {
	r := &Runner{Samplers: []rl.Sampler{sim.NewSampler(sim.SamplerConfig{Tokens: 4, Static: true})}, GroupSize: 8,
		Params: rl.SamplingParams{MaxTokens: 16}}
	p := &SingleTurn{ID: "p", Prompt: rl.Tokens([]int{1, 2, 3}),
		Reward: func(_ context.Context, s reward.Sample) (float64, error) { return float64(s.Tokens[0] & 1), nil }}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Rollout(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
