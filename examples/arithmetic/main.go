// Command arithmetic is `tandem train`'s job in one page of Go: the shipped
// base model, a LoRA trainer and a sampler on the embedded engine, the
// arithmetic task's reward (final-integer match plus a small format term)
// and dataset, GRPO with the PPO objective, and the asynchronous loop (max
// staleness 2). `tandem train` runs the same job with a run folder,
// checkpoints, plots and evaluation along the way; this file shows the
// library underneath.
//
//	go run ./examples/arithmetic
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// pipeline is the loop's configuration: 16 groups of 8 completions per
// step, Adam at 2e-3, up to 24 tokens per answer at temperature 1.
func pipeline(steps, maxStaleness int) rl.Config {
	return rl.Config{
		Run: "arith", GroupsPerBatch: 16, GroupSize: 8, Steps: steps, Seed: 1,
		MaxStaleness: maxStaleness, StalePolicy: rl.Pace,
		Adam:     rl.AdamParams{LearningRate: 2e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, GradClipNorm: 1},
		Sampling: rl.SamplingParams{MaxTokens: 24, Temperature: 1, StopTokens: []int{engine.Newline, engine.EOS}},
	}
}

// grpo is the algorithm: group-relative advantages and the PPO objective
// (clipped against the behaviour policy), no KL penalty.
var grpo = algo.Config{Objective: algo.PPO}

func main() {
	steps := flag.Int("steps", 80, "learner steps")
	k := flag.Int("max-staleness", 2, "max staleness (0 = synchronous)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := pipeline(*steps, *k)

	base, err := basemodel.Load()
	if err != nil {
		log.Fatal(err)
	}
	trainer, err := local.NewTrainer(base, local.TrainerOptions{Run: cfg.Run})
	if err != nil {
		log.Fatal(err)
	}
	defer trainer.Close()
	sampler, err := local.NewSampler(base, local.SamplerOptions{Shelf: trainer.Shelf(), Seed: uint64(cfg.Seed)})
	if err != nil {
		log.Fatal(err)
	}
	algorithm, err := algo.New(grpo, nil)
	if err != nil {
		log.Fatal(err)
	}

	// The task: training problems shuffled with the seed, each rewarded 1
	// for the right final integer plus 0.1 for answering tersely (" 47").
	// Held-out problems are never trained on.
	dataset := arithmetic.Dataset(cfg.Seed, arithmetic.Reward(arithmetic.FormatWeight))
	_, held := arithmetic.Split()

	lp, err := loop.New(cfg, loop.Deps{
		Trainer: trainer, Samplers: []rl.Sampler{sampler}, Dataset: dataset, Algorithm: algorithm,
		Decode: arithmetic.Decode,
		Observer: func(m loop.StepMetrics) {
			fmt.Printf("step %3d  reward %.3f  staleness max %d  log-prob gap %.4f\n", m.Step+1, m.MeanReward, m.MaxStaleness, m.LogprobGap)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := lp.Run(ctx); err != nil {
		log.Fatal(err)
	}

	// Held-out accuracy of the tuned policy, the last version the trainer
	// published (the sampler may still serve the one before): one sample
	// per problem, graded by the reward's correctness term.
	last, ok := lp.Registry().Get(lp.Report().Version)
	if !ok {
		log.Fatalf("version %d was not published", lp.Report().Version)
	}
	if err := sampler.Load(ctx, last); err != nil {
		log.Fatal(err)
	}
	res, err := arithmetic.Evaluate(ctx, sampler, held, cfg.Sampling, 1, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("held-out accuracy %.3f (version %d, %d problems)\n", res.Accuracy, res.Version, res.Problems)
}
