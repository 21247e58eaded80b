package loop_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/rollout"
)

// A complete asynchronous run on the simulated backend: 5 learner steps of
// 4 groups of 8 samples, training on data at most one version old.
func Example() {
	// A dataset of single-turn problems scored by a built-in reward.
	var problems []rollout.Problem
	for i := range 100 {
		problems = append(problems, &rollout.SingleTurn{
			ID:        strconv.Itoa(i),
			Prompt:    rl.Tokens([]int{i, 1, 2}),
			Reference: "7",
			Reward:    reward.FinalInteger(),
		})
	}
	cfg := rl.Config{GroupsPerBatch: 4, GroupSize: 8, MaxStaleness: 1, Steps: 5}
	maxStale := 0
	l, err := loop.New(cfg, loop.Deps{
		Trainer:  sim.NewTrainer(sim.TrainerConfig{}),
		Samplers: []rl.Sampler{sim.NewSampler(sim.SamplerConfig{Tokens: 4})},
		Dataset:  rollout.NewSliceDataset(problems, 0, 1),
		Decode:   func(toks []int) string { return fmt.Sprint(toks) },
		Observer: func(m loop.StepMetrics) { maxStale = max(maxStale, m.MaxStaleness) },
	})
	if err != nil {
		panic(err)
	}
	if err := l.Run(context.Background()); err != nil {
		panic(err)
	}
	rep := l.Report()
	fmt.Println("steps:", rep.Steps, "version:", rep.Version)
	fmt.Println("trained groups:", rep.Buffer.Trained, "dropped:", rep.Buffer.Dropped)
	fmt.Println("max staleness ≤ 1:", maxStale <= 1)
	// Output:
	// steps: 5 version: 5
	// trained groups: 20 dropped: 0
	// max staleness ≤ 1: true
}

// An invalid configuration fails at construction, naming the field and
// the values allowed.
func ExampleNew_invalid() {
	_, err := loop.New(rl.Config{GroupsPerBatch: 8, GroupSize: 4, StalePolicy: "evict"}, loop.Deps{})
	fmt.Println(err)
	// Output:
	// rl: invalid config: StalePolicy is "evict"; allowed: pace, drop, requeue
}
