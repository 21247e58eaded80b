// Command arithmetic is GRPO on "What is x + y?" in one page of Go: the
// shipped base model, a LoRA trainer and a sampler on the embedded engine, a
// final-integer reward with a small format term, and the asynchronous loop
// (max staleness 2). `tandem train` runs the same job with a run folder,
// plots and evaluation; this file shows the library underneath.
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
	"strconv"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/rollout"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

func main() {
	steps := flag.Int("steps", 30, "learner steps")
	k := flag.Int("max-staleness", 2, "max staleness (0 = synchronous)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	base, err := basemodel.Load()
	if err != nil {
		log.Fatal(err)
	}
	trainer, err := local.NewTrainer(base, local.TrainerOptions{Run: "arith"})
	if err != nil {
		log.Fatal(err)
	}
	defer trainer.Close()
	sampler, err := local.NewSampler(base, local.SamplerOptions{Shelf: trainer.Shelf()})
	if err != nil {
		log.Fatal(err)
	}

	// Reward: 1 for the right final integer, 0.1 for answering tersely.
	terse, err := reward.Format(`^ -?\d+\n?$`)
	if err != nil {
		log.Fatal(err)
	}
	score := reward.Sum(reward.Term{Weight: 1, Func: reward.FinalInteger()}, reward.Term{Weight: 0.1, Func: terse})

	// One problem per training pair; held-out pairs are never seen.
	var tok engine.Tokenizer
	train, held := arithmetic.Split()
	problems := make([]rollout.Problem, len(train))
	for i, p := range train {
		ids, _ := tok.Encode(p.Prompt())
		problems[i] = &rollout.SingleTurn{
			ID:        p.String(),
			Prompt:    rl.Tokens(append([]int{engine.BOS}, ids...)),
			Reference: strconv.Itoa(p.Answer()),
			Reward:    score,
		}
	}

	sampling := rl.SamplingParams{MaxTokens: 16, Temperature: 1, StopTokens: []int{engine.Newline}}
	cfg := rl.Config{
		GroupsPerBatch: 16, GroupSize: 8, MaxStaleness: *k, Steps: *steps,
		Adam: rl.AdamParams{LearningRate: 2e-3, GradClipNorm: 1}, Sampling: sampling, Run: "arith",
	}
	lp, err := loop.New(cfg, loop.Deps{
		Trainer: trainer, Samplers: []rl.Sampler{sampler},
		Dataset: rollout.NewSliceDataset(problems, 0, -1), Decode: tok.Decode,
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

	// Held-out accuracy of the tuned policy (the sampler serves the last
	// published version).
	res, err := arithmetic.Evaluate(ctx, sampler, tok, []int{engine.BOS}, held[:200], sampling, 1, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("held-out accuracy %.3f (version %d, %d problems)\n", res.Accuracy, res.Version, res.Problems)
}
