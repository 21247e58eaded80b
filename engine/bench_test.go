package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// arithmeticBatch returns 128 independent problems "What is x + y? z\n"
// with x, y < 100 (every one a different prompt), about 2,600 tokens.
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

// arithmeticGroups returns an RL batch of 16 groups × 8 completions: each
// group shares a 17-token prompt (BOS + "What is 12 + 35?"), each completion
// is " <answer>\n" with an answer of 1–4 digits (3–6 tokens, the correct sum
// half of the time), and the inputs are prompt + completion[:-1]. Advantages
// are the group's ±1 rewards.
func arithmeticGroups(tb testing.TB) []Example {
	rng := rand.New(rand.NewPCG(2, 2))
	var tok Tokenizer
	var out []Example
	for range 16 {
		x, y := 10+rng.IntN(90), 10+rng.IntN(90)
		for range 8 {
			ans, adv := x+y, 1.0
			if rng.IntN(2) == 0 {
				ans, adv = []int{rng.IntN(10), rng.IntN(100), rng.IntN(1000), rng.IntN(10000)}[rng.IntN(4)], -1
			}
			ids, err := tok.Encode(fmt.Sprintf("What is %d + %d? %d\n", x, y, ans))
			if err != nil {
				tb.Fatal(err)
			}
			seq := append([]int{BOS}, ids...)
			ex := Example{Input: seq[:len(seq)-1], Targets: seq[1:]}
			for range ex.Input {
				ex.Logprobs = append(ex.Logprobs, -1)
				ex.Advantages = append(ex.Advantages, adv)
			}
			out = append(out, ex)
		}
	}
	return out
}

// benchTrainStep measures one importance-sampling forward-backward plus
// AdamW step of the default model on data, reporting input tokens per
// second, seconds per step and process CPU seconds per step (steadier than
// wall time on a shared machine).
func benchTrainStep(b *testing.B, data []Example, opts TrainerOptions) {
	base, err := NewModel[float32](DefaultConfig(), 1)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := NewTrainer(base, DefaultLoraConfig(), opts)
	if err != nil {
		b.Fatal(err)
	}
	tokens := 0
	for _, ex := range data {
		tokens += len(ex.Input)
	}
	cpu0 := processCPU()
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
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/step")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/step")
	}
}

// BenchmarkTrainStep measures one LoRA importance-sampling forward-backward
// plus AdamW step of the default model on ~2,600 tokens of 128 independent
// problems, with shared-prefix packing off and on (the problems share only
// BOS + "What is ", 9 tokens).
func BenchmarkTrainStep(b *testing.B) {
	benchModes(b, arithmeticBatch)
}

// BenchmarkTrainStepGroups measures the same step on an RL batch of 16
// groups × 8 completions sharing a 17-token prompt (~2,600 tokens), with
// shared-prefix packing off and on. tokens/s counts every example's input
// tokens, so the figures compare directly.
func BenchmarkTrainStepGroups(b *testing.B) {
	benchModes(b, arithmeticGroups)
}

func benchModes(b *testing.B, batch func(testing.TB) []Example) {
	for _, threads := range []int{1, 2} {
		for _, mode := range []string{"unshared", "shared"} {
			b.Run(fmt.Sprintf("%s/threads=%d", mode, threads), func(b *testing.B) {
				benchTrainStep(b, batch(b), TrainerOptions{Threads: threads, NoPrefixSharing: mode == "unshared"})
			})
		}
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
			p := SamplingParams{MaxTokens: 10, Temperature: 1, Seed: 1}
			n := 0
			cpu0 := processCPU()
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
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(n)/cpu.Seconds(), "tokens/cpu-s")
			}
		})
	}
}

// BenchmarkSampleAdapter is BenchmarkSample serving a random adapter on
// every projection and the unembedding, applied unmerged.
func BenchmarkSampleAdapter(b *testing.B) {
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
			ad, err := NewAdapter[float32](DefaultConfig(), DefaultLoraConfig())
			if err != nil {
				b.Fatal(err)
			}
			randomizeAdapter(ad, 3, 0.05)
			if err := s.SetAdapter(ad); err != nil {
				b.Fatal(err)
			}
			prompt, _ := Tokenizer{}.Encode("What is 12 + 35?")
			prompt = append([]int{BOS}, prompt...)
			p := SamplingParams{MaxTokens: 10, Temperature: 1, Seed: 1}
			n := 0
			cpu0 := processCPU()
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
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(n)/cpu.Seconds(), "tokens/cpu-s")
			}
		})
	}
}
