package loop

import (
	"context"
	"testing"
	"time"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

// BenchmarkOverhead measures the orchestration cost per sample with
// zero-latency simulated backends: 64 groups of 8 per batch, 64 workers,
// k = 2. b.N counts learner steps; the reported figure is ns/sample.
func BenchmarkOverhead(b *testing.B) {
	const groups, size = 64, 8
	score := reward.Func(func(_ context.Context, s reward.Sample) (float64, error) { return float64(s.Tokens[0] & 1), nil })
	items := make([]rollout.Problem, 256)
	for i := range items {
		items[i] = &rollout.SingleTurn{ID: "p", Prompt: rl.Tokens([]int{i, 1, 2}), Reward: score}
	}
	cfg := rl.Config{GroupsPerBatch: groups, GroupSize: size, MaxStaleness: 2, Workers: 64, Steps: b.N, Watchdog: time.Hour}
	l, err := New(cfg, Deps{
		Trainer:  sim.NewTrainer(sim.TrainerConfig{NoOutputs: true}),
		Samplers: []rl.Sampler{sim.NewSampler(sim.SamplerConfig{Tokens: 4, Static: true})},
		Dataset:  rollout.NewSliceDataset(items, 0, -1),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if err := l.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*groups*size), "ns/sample")
}
