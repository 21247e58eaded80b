package pretrain

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/kernels"
)

// Options configure a pretraining run. The zero value of a field means its
// default (see DefaultOptions).
type Options struct {
	Config    engine.Config // zero: engine.DefaultConfig()
	Seed      uint64        // model init and corpus stream
	Steps     int           // optimizer steps
	Batch     int           // lines per step
	LR        float64       // peak learning rate
	Warmup    int           // linear warm-up steps, then cosine decay to LR/10
	NoiseRate float64       // fraction of corpus lines with a wrong answer
	Threads   int           // goroutines per step; does not change the result
	EvalN     int           // held-out problems for the final greedy accuracy; < 0: none
}

// DefaultOptions is the recipe of the shipped base model.
func DefaultOptions() Options {
	return Options{Config: engine.DefaultConfig(), Seed: 1, Steps: 800, Batch: 128, LR: 3e-3, Warmup: 80, NoiseRate: 0.1, EvalN: 200}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Config == (engine.Config{}) {
		o.Config = d.Config
	}
	if o.Steps == 0 {
		o.Steps = d.Steps
	}
	if o.Batch == 0 {
		o.Batch = d.Batch
	}
	if o.LR == 0 {
		o.LR = d.LR
	}
	if o.Warmup == 0 {
		o.Warmup = min(d.Warmup, o.Steps/10)
	}
	if o.EvalN == 0 {
		o.EvalN = d.EvalN
	}
	return o
}

// Validate checks the options (after defaults).
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case o.Steps < 1:
		return fmt.Errorf("pretrain: steps %d must be positive", o.Steps)
	case o.Batch < 1:
		return fmt.Errorf("pretrain: batch %d must be positive", o.Batch)
	case !(o.LR > 0) || math.IsInf(o.LR, 0):
		return fmt.Errorf("pretrain: lr %v must be a positive finite number", o.LR)
	case o.Warmup < 0:
		return fmt.Errorf("pretrain: warmup %d must be non-negative", o.Warmup)
	case !(o.NoiseRate >= 0 && o.NoiseRate < 1):
		return fmt.Errorf("pretrain: noise rate %v must be in [0, 1)", o.NoiseRate)
	}
	return o.Config.Validate()
}

// lr is the learning rate at 1-based step s: linear warm-up, then cosine
// decay from LR to LR/10.
func (o Options) lr(s int) float64 {
	if s <= o.Warmup {
		return o.LR * float64(s) / float64(max(1, o.Warmup))
	}
	frac := float64(s-o.Warmup) / float64(max(1, o.Steps-o.Warmup))
	return o.LR * (0.1 + 0.9*0.5*(1+math.Cos(math.Pi*frac)))
}

// Progress is reported after every step.
type Progress struct {
	Step, Steps int
	Loss        float64 // mean cross-entropy per token of this step's batch
	LR          float64
}

// Report summarizes a run.
type Report struct {
	Options   Options
	Params    int
	Tokens    int     // training tokens seen
	FinalLoss float64 // mean per-token loss over the last 10% of steps
	Accuracy  float64 // greedy exact-answer rate on EvalN held-out problems
	// Kernels names the matrix kernels used (kernels.Implementation()):
	// results are bit-identical across runs and thread counts for the same
	// kernels; AVX-512, AVX2 and portable kernels round differently. Set
	// TANDEM_KERNELS to pin one.
	Kernels string
}

// Run pretrains a model from scratch. progress (may be nil) is called after
// every step on the calling goroutine. The result depends only on the
// options, not on Threads or the machine.
func Run(ctx context.Context, o Options, progress func(Progress)) (*engine.Model[float32], Report, error) {
	if err := o.Validate(); err != nil {
		return nil, Report{}, err
	}
	o = o.withDefaults()
	base, err := engine.NewModel[float32](o.Config, o.Seed)
	if err != nil {
		return nil, Report{}, err
	}
	tr, err := engine.NewTrainer(base, engine.LoraConfig{}, engine.TrainerOptions{Threads: o.Threads, Full: true})
	if err != nil {
		return nil, Report{}, err
	}
	corpus := NewCorpus(o.Seed, 1, o.NoiseRate)
	var tok engine.Tokenizer
	rep := Report{Options: o, Params: base.NumParams(), Kernels: kernels.Implementation()}
	tail := max(1, o.Steps/10)
	var tailLoss, tailTokens float64
	for s := 1; s <= o.Steps; s++ {
		batch := make([]engine.Example, o.Batch)
		for i := range batch {
			_, line := corpus.Line()
			ids, err := tok.Encode(line)
			if err != nil {
				return nil, Report{}, err
			}
			seq := append([]int{engine.BOS}, ids...)
			batch[i] = engine.Example{Input: seq[:len(seq)-1], Targets: seq[1:]}
		}
		out, err := tr.ForwardBackward(ctx, batch, engine.LossSpec{Name: engine.CrossEntropy})
		if err != nil {
			return nil, Report{}, fmt.Errorf("pretrain step %d: %w", s, err)
		}
		lr := o.lr(s)
		if _, err := tr.OptimStep(engine.AdamParams{LearningRate: lr, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.01, GradClipNorm: 1}); err != nil {
			return nil, Report{}, err
		}
		n := out.Metrics["tokens:sum"]
		rep.Tokens += int(n)
		if s > o.Steps-tail {
			tailLoss += out.Metrics["loss:sum"]
			tailTokens += n
		}
		if progress != nil {
			progress(Progress{Step: s, Steps: o.Steps, Loss: out.Metrics["loss:sum"] / n, LR: lr})
		}
	}
	rep.FinalLoss = tailLoss / tailTokens
	model := tr.Model()
	if o.EvalN > 0 {
		if rep.Accuracy, err = Accuracy(ctx, model, o.Seed, o.EvalN, o.Threads); err != nil {
			return nil, Report{}, err
		}
	}
	return model, rep, nil
}

// Accuracy returns the fraction of n held-out problems (drawn from a stream
// the training corpus never uses) that model answers exactly under greedy
// decoding.
func Accuracy(ctx context.Context, model *engine.Model[float32], seed uint64, n, threads int) (float64, error) {
	if n <= 0 {
		return 0, errors.New("pretrain: accuracy needs a positive problem count")
	}
	s, err := engine.NewSampler(model, engine.SamplerOptions{Threads: threads})
	if err != nil {
		return 0, err
	}
	c := NewCorpus(seed, 2, 0)
	var tok engine.Tokenizer
	right := 0
	for range n {
		p := c.Problem()
		ids, err := tok.Encode(p.Prompt())
		if err != nil {
			return 0, err
		}
		seqs, _, err := s.Sample(ctx, append([]int{engine.BOS}, ids...), 1,
			engine.SampleParams{MaxTokens: 6, StopTokens: []int{engine.Newline}})
		if err != nil {
			return 0, err
		}
		if tok.Decode(seqs[0].Tokens) == fmt.Sprintf(" %d\n", p.Answer) {
			right++
		}
	}
	return float64(right) / float64(n), nil
}
