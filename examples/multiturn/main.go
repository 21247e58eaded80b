// Command multiturn trains a policy on a multi-turn environment:
// guess-the-number with "Higher?"/"Lower?" feedback after each guess. Each
// turn is a Transition of the trajectory; the group-relative algorithm gives
// every turn of an episode the episode's advantage.
//
//	go run ./examples/multiturn
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/rollout"
)

func main() {
	steps := flag.Int("steps", 20, "learner steps")
	turns := flag.Int("turns", 7, "guesses per episode (an episode also ends when another turn would not fit the context)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	base, err := basemodel.Load()
	if err != nil {
		log.Fatal(err)
	}
	trainer, err := local.NewTrainer(base, local.TrainerOptions{Run: "guess"})
	if err != nil {
		log.Fatal(err)
	}
	defer trainer.Close()
	sampler, err := local.NewSampler(base, local.SamplerOptions{Shelf: trainer.Shelf()})
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	problems := make([]rollout.Problem, 2000)
	for i := range problems {
		problems[i] = problem{secret: rng.IntN(100), maxTurns: *turns}
	}
	var tok engine.Tokenizer
	cfg := rl.Config{
		GroupsPerBatch: 8, GroupSize: 8, MaxStaleness: 1, Steps: *steps, MaxTurns: *turns,
		Adam:     rl.AdamParams{LearningRate: 2e-3, GradClipNorm: 1},
		Sampling: rl.SamplingParams{MaxTokens: 6, Temperature: 1}, Run: "guess",
	}
	lp, err := loop.New(cfg, loop.Deps{
		Trainer: trainer, Samplers: []rl.Sampler{sampler},
		Dataset: rollout.NewSliceDataset(problems, 0, -1), Decode: tok.Decode,
		Observer: func(m loop.StepMetrics) {
			fmt.Printf("step %3d  mean return %.3f  (%d episodes)\n", m.Step+1, m.MeanReward, m.Samples)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := lp.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
