// Command sft fine-tunes the shipped base model on data.jsonl, 400 correct
// answers to training problems of the arithmetic task, and measures what it
// changed: the loss per token on 40 of those lines kept aside, and accuracy
// on held-out problems never trained on (one sample per problem at
// temperature 1, graded by its final integer; greedy accuracy beside it).
//
//	go run ./examples/sft
//
// data.jsonl is written by gendata (go generate ./examples/sft).
package main

//go:generate go run ./gendata -o data.jsonl

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sft"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

//go:embed data.jsonl
var dataset []byte

func main() {
	epochs := flag.Int("epochs", 10, "passes over the training lines")
	lr := flag.Float64("lr", 3e-3, "peak learning rate")
	problems := flag.Int("eval", 200, "held-out problems to grade")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()

	base, err := basemodel.Load()
	if err != nil {
		log.Fatal(err)
	}
	trainer, err := local.NewTrainer(base, local.TrainerOptions{Run: "sft"})
	if err != nil {
		log.Fatal(err)
	}
	defer trainer.Close()
	sampler, err := local.NewSampler(base, local.SamplerOptions{Shelf: trainer.Shelf()})
	if err != nil {
		log.Fatal(err)
	}

	// The dataset: the last 40 lines measure the loss, the rest train.
	var tok engine.Tokenizer
	exs, err := sft.ReadJSONL(bytes.NewReader(dataset))
	if err != nil {
		log.Fatal(err)
	}
	data, err := sft.Datums(tok, exs, sft.Format{Prefix: []int{engine.BOS}, MaxTokens: base.Config.Context})
	if err != nil {
		log.Fatal(err)
	}
	train, lossSet := data[:len(data)-40], data[len(data)-40:]

	_, held := arithmetic.Split()
	sampling := rl.SamplingParams{MaxTokens: 16, Temperature: 1, StopTokens: []int{engine.Newline}}
	greedy := sampling
	greedy.Temperature = 0
	evaluate := func() (loss, acc, accGreedy float64) {
		loss, err := sft.Loss(ctx, trainer, lossSet)
		if err != nil {
			log.Fatal(err)
		}
		res, err := arithmetic.Evaluate(ctx, sampler, held[:*problems], sampling, 1, 1)
		if err != nil {
			log.Fatal(err)
		}
		g, err := arithmetic.Evaluate(ctx, sampler, held[:*problems], greedy, 1, 1)
		if err != nil {
			log.Fatal(err)
		}
		return loss, res.Accuracy, g.Accuracy
	}
	loss0, acc0, greedy0 := evaluate()
	fmt.Printf("before: loss %.4f per token, held-out accuracy %.3f (greedy %.3f)\n", loss0, acc0, greedy0)

	cfg := sft.Config{
		BatchSize: 32, Epochs: *epochs, Seed: 1,
		Adam:     rl.AdamParams{LearningRate: *lr, GradClipNorm: 1},
		Schedule: sft.Schedule{WarmupSteps: 3, Decay: sft.Cosine, MinFactor: 0.1},
	}
	var total int
	loop, err := sft.New(cfg, trainer, train, sft.Options{OnStep: func(m sft.StepMetrics) {
		fmt.Printf("step %3d/%d  epoch %d  lr %.2e  loss %.4f\n", m.Step, total, m.Epoch, m.LearningRate, m.Loss)
	}})
	if err != nil {
		log.Fatal(err)
	}
	total = loop.TotalSteps()
	sum, err := loop.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}

	// Publish the tuned adapter and let the sampler serve it.
	ref, err := trainer.SaveForSampler(ctx, "sft-final").Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := sampler.Load(ctx, ref); err != nil {
		log.Fatal(err)
	}
	loss1, acc1, greedy1 := evaluate()
	fmt.Printf("after:  loss %.4f per token, held-out accuracy %.3f (greedy %.3f)\n", loss1, acc1, greedy1)
	out, _ := json.Marshal(map[string]any{
		"loss_before": loss0, "loss_after": loss1,
		"base_accuracy": acc0, "final_accuracy": acc1,
		"base_accuracy_greedy": greedy0, "final_accuracy_greedy": greedy1,
		"accuracy": fmt.Sprintf("one sample per held-out problem (%d) at temperature 1, graded by final integer", *problems),
		"steps":    sum.Steps, "wall_seconds": time.Since(start).Seconds(),
	})
	fmt.Println(string(out))
}
