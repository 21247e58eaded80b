package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tandemrl/tandem/engine"
)

// A LoRA round trip: train on one sequence, save the adapter in PEFT
// layout, serve it from a sampler and draw completions.
func Example() {
	ctx := context.Background()
	cfg := engine.Config{Vocab: engine.VocabSize, Dim: 32, Layers: 2, Heads: 2, Hidden: 64, Context: 32}
	base, err := engine.NewModel[float32](cfg, 1)
	if err != nil {
		panic(err)
	}
	tr, err := engine.NewTrainer(base, engine.DefaultLoraConfig(), engine.TrainerOptions{Threads: 2})
	if err != nil {
		panic(err)
	}
	var tok engine.Tokenizer
	ids, _ := tok.Encode("What is 2 + 2? 4\n")
	seq := append([]int{engine.BOS}, ids...)
	data := []engine.Example{{Input: seq[:len(seq)-1], Targets: seq[1:]}}
	var first, last float64
	for step := range 30 {
		out, err := tr.ForwardBackward(ctx, data, engine.LossSpec{Name: engine.CrossEntropy})
		if err != nil {
			panic(err)
		}
		if step == 0 {
			first = out.Metrics["loss:sum"]
		}
		last = out.Metrics["loss:sum"]
		if _, err := tr.OptimStep(engine.AdamParams{LearningRate: 5e-3}); err != nil {
			panic(err)
		}
	}
	fmt.Println("loss went down:", last < first/4)

	dir, _ := os.MkdirTemp("", "adapter")
	defer os.RemoveAll(dir)
	if err := tr.SaveAdapter(filepath.Join(dir, "v30")); err != nil {
		panic(err)
	}
	s, err := engine.NewSampler(base, engine.SamplerOptions{Threads: 1})
	if err != nil {
		panic(err)
	}
	if err := s.LoadAdapter(filepath.Join(dir, "v30")); err != nil {
		panic(err)
	}
	prompt := seq[:len("What is 2 + 2?")+1]
	seqs, _, err := s.Sample(ctx, prompt, 4, engine.SamplingParams{
		MaxTokens: 8, Temperature: 1, Seed: 7, StopTokens: []int{engine.Newline},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("samples:", len(seqs), "each with a log-prob per token:", len(seqs[0].Logprobs) == len(seqs[0].Tokens))
	// Output:
	// loss went down: true
	// samples: 4 each with a log-prob per token: true
}
