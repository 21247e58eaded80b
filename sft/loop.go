package sft

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// ErrConfig is wrapped by every error Config.Validate returns.
var ErrConfig = errors.New("sft: invalid config")

// Config configures a supervised fine-tuning run. It is a plain
// serializable struct; a zero field means its documented default.
type Config struct {
	// BatchSize is the number of examples per optimizer step (default 32).
	// The last batch of an epoch may be smaller.
	BatchSize int `json:"batch_size,omitempty"`
	// Epochs is the number of passes over the data (default 1).
	Epochs int `json:"epochs,omitempty"`
	// MaxSteps, when positive, stops the run after this many steps.
	MaxSteps int `json:"max_steps,omitempty"`
	// Adam holds the optimizer settings; LearningRate is the peak rate the
	// Schedule scales (zero fields mean rl.AdamParams's defaults).
	Adam     rl.AdamParams `json:"adam"`
	Schedule Schedule      `json:"schedule"`
	// SaveEvery saves the training state (SaveState) every this many steps
	// and after the last step (0 = never). Checkpoints are named
	// "<SaveName>-<step>", the step zero-padded to 6 digits.
	SaveEvery int    `json:"save_every,omitempty"`
	SaveName  string `json:"save_name,omitempty"` // default "sft"
	// EvalEvery computes the loss per token on the evaluation data every
	// this many steps and after the last step (0 = only after the last;
	// without evaluation data, never).
	EvalEvery int `json:"eval_every,omitempty"`
	// Seed fixes the order of the examples: each epoch is a permutation
	// drawn from (Seed, epoch). NoShuffle keeps the data's order.
	Seed      uint64 `json:"seed,omitempty"`
	NoShuffle bool   `json:"no_shuffle,omitempty"`
	// StartStep resumes a run: the first StartStep steps are skipped (the
	// caller has restored the trainer with LoadState). The data order and
	// learning rates of the remaining steps are those of an uninterrupted
	// run.
	StartStep int `json:"start_step,omitempty"`
}

// WithDefaults returns c with zero fields replaced by their defaults.
func (c Config) WithDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = 32
	}
	if c.Epochs == 0 {
		c.Epochs = 1
	}
	if c.SaveName == "" {
		c.SaveName = "sft"
	}
	return c
}

// Validate checks c after defaults; errors name the field and the allowed
// values.
func (c Config) Validate() error {
	c = c.WithDefaults()
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s %s", ErrConfig, field, fmt.Sprintf(format, a...))
	}
	switch {
	case c.BatchSize < 1:
		return bad("BatchSize", "is %d; must be ≥ 1, or 0 for 32", c.BatchSize)
	case c.Epochs < 1:
		return bad("Epochs", "is %d; must be ≥ 1, or 0 for 1", c.Epochs)
	case c.MaxSteps < 0:
		return bad("MaxSteps", "is %d; must be ≥ 0 (0 = no limit)", c.MaxSteps)
	case c.SaveEvery < 0:
		return bad("SaveEvery", "is %d; must be ≥ 0 (0 = never)", c.SaveEvery)
	case c.EvalEvery < 0:
		return bad("EvalEvery", "is %d; must be ≥ 0 (0 = after the last step)", c.EvalEvery)
	case c.StartStep < 0:
		return bad("StartStep", "is %d; must be ≥ 0", c.StartStep)
	}
	if err := policy.ValidRunName(c.SaveName + "-000000"); err != nil {
		return bad("SaveName", "is %q: %v", c.SaveName, err)
	}
	if err := c.Adam.Validate(); err != nil {
		return fmt.Errorf("%w: Adam: %w", ErrConfig, err)
	}
	return c.Schedule.Validate()
}

// StepMetrics reports one optimizer step.
type StepMetrics struct {
	Step         int     `json:"step"`  // steps done, 1-based
	Epoch        int     `json:"epoch"` // 0-based
	LearningRate float64 `json:"learning_rate"`
	// Loss is the batch's cross-entropy per trained token (nats), Tokens
	// the number of trained tokens.
	Loss   float64 `json:"loss"`
	Tokens float64 `json:"tokens"`
	// EvalLoss is the loss per token on the evaluation data after the step
	// when Evaluated is set (see Config.EvalEvery), else 0.
	EvalLoss  float64 `json:"eval_loss,omitempty"`
	Evaluated bool    `json:"evaluated,omitempty"`
	// Metrics holds the trainer's numbers (e.g. "grad_norm").
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Options are a run's non-serializable parts. All are optional.
type Options struct {
	// Eval is held-out data whose loss is reported (see Config.EvalEvery).
	Eval []rl.Datum
	// OnStep is called after every step, from the goroutine running Run.
	OnStep func(StepMetrics)
	// OnSave is called after every checkpoint.
	OnSave func(step int, ref policy.Ref)
}

// Summary is the result of a run.
type Summary struct {
	Steps     int     `json:"steps"`      // the last step done
	FinalLoss float64 `json:"final_loss"` // loss per token of the last step run (0 if none ran)
	// EvalLoss is the last evaluation's loss per token, when Evaluated.
	EvalLoss    float64      `json:"eval_loss,omitempty"`
	Evaluated   bool         `json:"evaluated,omitempty"`
	Checkpoints []policy.Ref `json:"checkpoints,omitempty"`
}

// Loop is a supervised fine-tuning run over an rl.Trainer: batches of
// cross_entropy datums, epochs, a learning-rate schedule, checkpoints and
// per-step metrics. It is not safe for concurrent use; Run once.
type Loop struct {
	cfg   Config
	t     rl.Trainer
	train []rl.Datum
	opts  Options
}

// New validates cfg and returns a loop over train (cross_entropy datums, e.g.
// from Datums). The loop keeps the slices; the caller must not modify them
// while it runs.
func New(cfg Config, t rl.Trainer, train []rl.Datum, opts Options) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("sft: no trainer")
	}
	if len(train) == 0 {
		return nil, ErrNoExamples
	}
	return &Loop{cfg: cfg.WithDefaults(), t: t, train: train, opts: opts}, nil
}

// TotalSteps returns the number of optimizer steps of the whole run.
func (l *Loop) TotalSteps() int {
	per := (len(l.train) + l.cfg.BatchSize - 1) / l.cfg.BatchSize
	total := per * l.cfg.Epochs
	if l.cfg.MaxSteps > 0 {
		total = min(total, l.cfg.MaxSteps)
	}
	return total
}

// batch returns the datums of step s (0-based) and its epoch.
func (l *Loop) batch(s int, perm []int, permEpoch *int) ([]rl.Datum, int) {
	n, bs := len(l.train), l.cfg.BatchSize
	per := (n + bs - 1) / bs
	epoch, k := s/per, s%per
	if *permEpoch != epoch {
		*permEpoch = epoch
		for i := range perm {
			perm[i] = i
		}
		if !l.cfg.NoShuffle {
			rng := rand.New(rand.NewPCG(l.cfg.Seed, uint64(epoch)))
			rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		}
	}
	idx := perm[k*bs : min((k+1)*bs, n)]
	out := make([]rl.Datum, len(idx))
	for i, j := range idx {
		out[i] = l.train[j]
	}
	return out, epoch
}

// Run trains until the last step, ctx ends, or a trainer call fails. Each
// step submits forward-backward and the optimizer step back to back, then
// waits on both.
func (l *Loop) Run(ctx context.Context) (Summary, error) {
	total := l.TotalSteps()
	sum := Summary{Steps: l.cfg.StartStep}
	perm := make([]int, len(l.train))
	permEpoch := -1
	ce := rl.Loss{Name: rl.CrossEntropy}
	for s := l.cfg.StartStep; s < total; s++ {
		if err := context.Cause(ctx); err != nil {
			return sum, fmt.Errorf("sft: stopped before step %d: %w", s+1, err)
		}
		data, epoch := l.batch(s, perm, &permEpoch)
		adam := l.cfg.Adam.WithDefaults()
		adam.LearningRate *= l.cfg.Schedule.Factor(s, total)
		fb := l.t.ForwardBackward(ctx, data, ce)
		op := l.t.OptimStep(ctx, adam)
		out, err := fb.Wait(ctx)
		if err != nil {
			return sum, fmt.Errorf("sft: step %d: forward-backward: %w", s+1, err)
		}
		st, err := op.Wait(ctx)
		if err != nil {
			return sum, fmt.Errorf("sft: step %d: optimizer step: %w", s+1, err)
		}
		tokens := weightSum(data)
		m := StepMetrics{Step: s + 1, Epoch: epoch, LearningRate: adam.LearningRate, Tokens: tokens,
			Loss: out.Metrics["loss:sum"] / max(tokens, 1), Metrics: st.Metrics}
		sum.Steps, sum.FinalLoss = s+1, m.Loss
		last := s+1 == total
		if len(l.opts.Eval) > 0 && (last || (l.cfg.EvalEvery > 0 && (s+1)%l.cfg.EvalEvery == 0)) {
			if m.EvalLoss, err = Loss(ctx, l.t, l.opts.Eval); err != nil {
				return sum, fmt.Errorf("sft: step %d: evaluation: %w", s+1, err)
			}
			m.Evaluated = true
			sum.EvalLoss, sum.Evaluated = m.EvalLoss, true
		}
		if l.opts.OnStep != nil {
			l.opts.OnStep(m)
		}
		if l.cfg.SaveEvery > 0 && (last || (s+1)%l.cfg.SaveEvery == 0) {
			name := fmt.Sprintf("%s-%06d", l.cfg.SaveName, s+1)
			ref, err := l.t.SaveState(ctx, name).Wait(ctx)
			if err != nil {
				return sum, fmt.Errorf("sft: step %d: save %s: %w", s+1, name, err)
			}
			sum.Checkpoints = append(sum.Checkpoints, ref)
			if l.opts.OnSave != nil {
				l.opts.OnSave(s+1, ref)
			}
		}
	}
	return sum, nil
}

// Loss returns the cross-entropy per trained token of data under the
// trainer's current weights (one Forward, no gradients).
func Loss(ctx context.Context, t rl.Trainer, data []rl.Datum) (float64, error) {
	if len(data) == 0 {
		return math.NaN(), ErrNoExamples
	}
	out, err := t.Forward(ctx, data, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	if err != nil {
		return math.NaN(), err
	}
	return out.Metrics["loss:sum"] / max(weightSum(data), 1), nil
}
