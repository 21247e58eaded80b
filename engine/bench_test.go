package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// arithmeticBatch returns 128 sequences like the RL main job's batch: 16
// groups × 8 samples of prompt + ~10-token completion, about 3,000 tokens.
func arithmeticBatch(b testing.TB) []Example {
	rng := rand.New(rand.NewPCG(1, 1))
	var tok Tokenizer
	var out []Example
	for range 128 {
		x, y := rng.IntN(100), rng.IntN(100)
		s := fmt.Sprintf("What is %d + %d? %d\n", x, y, x+y)
		ids, err := tok.Encode(s)
		if err != nil {
			b.Fatal(err)
		}
		seq := append([]int{BOS}, ids...)
		ex := Example{Input: seq[:len(seq)-1], Targets: seq[1:]}
		for i := range ex.Input {
			ex.Logprobs = append(ex.Logprobs, -1)
			ex.Advantages = append(ex.Advantages, float64(i%3)-1)
		}
		out = append(out, ex)
	}
	return out
}

// BenchmarkTrainStep measures one LoRA importance-sampling forward-backward
// plus AdamW step of the default model on ~3,000 tokens.
func BenchmarkTrainStep(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			base, err := NewModel[float32](DefaultConfig(), 1)
			if err != nil {
				b.Fatal(err)
			}
			tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{Threads: threads})
			if err != nil {
				b.Fatal(err)
			}
			data := arithmeticBatch(b)
			tokens := 0
			for _, ex := range data {
				tokens += len(ex.Input)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := tr.ForwardBackward(context.Background(), data, LossSpec{Name: ImportanceSampling}); err != nil {
					b.Fatal(err)
				}
				if _, err := tr.OptimStep(AdamParams{LearningRate: 1e-4}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(tokens*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkSample measures sampling 8 completions of 10 tokens from a
// 14-token prompt with the default model (one RL group).
func BenchmarkSample(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			base, err := NewModel[float32](DefaultConfig(), 1)
			if err != nil {
				b.Fatal(err)
			}
			s, err := NewSampler(base, SamplerOptions{Threads: threads})
			if err != nil {
				b.Fatal(err)
			}
			prompt, _ := Tokenizer{}.Encode("What is 12 + 35?")
			prompt = append([]int{BOS}, prompt...)
			p := SampleParams{MaxTokens: 10, Temperature: 1, Seed: 1}
			n := 0
			for b.Loop() {
				seqs, _, err := s.Sample(context.Background(), prompt, 8, p)
				if err != nil {
					b.Fatal(err)
				}
				for _, sq := range seqs {
					n += len(sq.Tokens)
				}
				p.Seed++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
