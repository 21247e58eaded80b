package basemodel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// PretrainConfig fixes everything that determines the base model: the same
// config gives the same weights, bit for bit, on any machine and any
// thread count.
type PretrainConfig struct {
	Model  engine.Config           `json:"model"`
	Corpus arithmetic.CorpusConfig `json:"corpus"`
	Seed   uint64                  `json:"seed"`
	Steps  int                     `json:"steps"`
	Batch  int                     `json:"batch"`  // corpus lines per step
	LR     float64                 `json:"lr"`     // peak learning rate
	Warmup int                     `json:"warmup"` // linear warm-up steps
	MinLR  float64                 `json:"min_lr"` // cosine floor, as a fraction of LR
	// PromptWeight is the loss weight of the prompt's tokens; the answer's
	// (everything after the question mark) weigh 1. Less weight on the
	// random operands puts the gradient where the skill is.
	PromptWeight float64           `json:"prompt_weight"`
	Adam         engine.AdamParams `json:"adam"` // LearningRate is set per step from the schedule
}

// DefaultPretrainConfig is the recipe of the shipped base model.
func DefaultPretrainConfig() PretrainConfig {
	return PretrainConfig{
		Model:        engine.DefaultConfig(),
		Seed:         1,
		Steps:        1600,
		Batch:        128,
		LR:           3e-3,
		Warmup:       100,
		MinLR:        0.1,
		PromptWeight: 0.2,
		Corpus:       arithmetic.CorpusConfig{CorrectProb: 0.5, WordyProb: 0.15},
		Adam:         engine.AdamParams{Beta1: 0.9, Beta2: 0.98, Eps: 1e-8, WeightDecay: 0.01, GradClipNorm: 1},
	}
}

// Validate checks every field.
func (c PretrainConfig) Validate() error {
	if err := c.Model.Validate(); err != nil {
		return err
	}
	if err := c.Corpus.Validate(); err != nil {
		return err
	}
	switch {
	case c.Steps < 1:
		return fmt.Errorf("basemodel: steps %d must be positive", c.Steps)
	case c.Batch < 1:
		return fmt.Errorf("basemodel: batch %d must be positive", c.Batch)
	case !(c.LR > 0):
		return fmt.Errorf("basemodel: lr %v must be positive", c.LR)
	case c.Warmup < 0:
		return fmt.Errorf("basemodel: warmup %d must not be negative", c.Warmup)
	case c.MinLR < 0 || c.MinLR > 1:
		return fmt.Errorf("basemodel: min_lr %v must be in [0, 1]", c.MinLR)
	case c.PromptWeight < 0 || c.PromptWeight > 1:
		return fmt.Errorf("basemodel: prompt_weight %v must be in [0, 1]", c.PromptWeight)
	}
	return nil
}

// LearningRate is the schedule: linear warm-up to LR, then cosine decay to
// MinLR·LR at the last step.
func (c PretrainConfig) LearningRate(step int) float64 {
	if step < c.Warmup {
		return c.LR * float64(step+1) / float64(c.Warmup)
	}
	span := max(1, c.Steps-c.Warmup)
	frac := float64(step-c.Warmup) / float64(span)
	cos := 0.5 * (1 + math.Cos(math.Pi*min(frac, 1)))
	return c.LR * (c.MinLR + (1-c.MinLR)*cos)
}

// StepReport is what Pretrain tells its observer after each step.
type StepReport struct {
	Step    int           `json:"step"`
	Loss    float64       `json:"loss"` // weighted cross-entropy per token, nats
	LR      float64       `json:"lr"`
	Tokens  int           `json:"tokens"`
	Elapsed time.Duration `json:"elapsed"`
}

// Pretrain trains a model from scratch on the noisy arithmetic corpus
// (training problems only: held-out problems never appear). threads bounds
// the goroutines used; it does not change the result. observe, if not nil,
// is called after every step.
func Pretrain(ctx context.Context, cfg PretrainConfig, threads int, observe func(StepReport)) (*engine.Model[float32], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	model, err := engine.NewModel[float32](cfg.Model, cfg.Seed)
	if err != nil {
		return nil, err
	}
	// The shipped weights were made with every line packed on its own; shared
	// prefixes would round differently and break the bit-for-bit promise.
	tr, err := engine.NewTrainer(model, engine.LoraConfig{}, engine.TrainerOptions{Threads: threads, Full: true, NoPrefixSharing: true})
	if err != nil {
		return nil, err
	}
	train, _ := arithmetic.Split()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xc0ffee))
	var tok engine.Tokenizer
	start := time.Now()
	for step := range cfg.Steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("basemodel: pretrain stopped at step %d: %w", step, context.Cause(ctx))
		}
		batch := make([]engine.Example, cfg.Batch)
		ntok := 0
		for i := range batch {
			p := train[rng.IntN(len(train))]
			ids, err := tok.Encode(cfg.Corpus.Line(rng, p))
			if err != nil {
				return nil, err
			}
			seq := append([]int{engine.BOS}, ids...)
			w := make([]float64, len(seq)-1)
			answerFrom := len(p.Prompt()) + 1 // seq index of the space after '?'
			for j := range w {
				w[j] = cfg.PromptWeight
				if j+1 >= answerFrom {
					w[j] = 1
				}
			}
			batch[i] = engine.Example{Input: seq[:len(seq)-1], Targets: seq[1:], Weights: w}
			ntok += len(seq) - 1
		}
		out, err := tr.ForwardBackward(ctx, batch, engine.LossSpec{Name: engine.CrossEntropy})
		if err != nil {
			return nil, fmt.Errorf("basemodel: step %d: %w", step, err)
		}
		adam := cfg.Adam
		adam.LearningRate = cfg.LearningRate(step)
		if _, err := tr.OptimStep(adam); err != nil {
			return nil, fmt.Errorf("basemodel: step %d: %w", step, err)
		}
		if observe != nil {
			observe(StepReport{Step: step, Loss: out.Metrics["loss:sum"] / float64(ntok), LR: adam.LearningRate, Tokens: ntok, Elapsed: time.Since(start)})
		}
	}
	return tr.Model(), nil
}
