package engine

import (
	"context"
	"fmt"
	"math"
)

// TrainerOptions configure a [Trainer].
type TrainerOptions struct {
	// Threads bounds the goroutines one call uses (0 or 1: the caller's
	// goroutine only). Results do not depend on it.
	Threads int
	// Full trains every base weight (pretraining) instead of a LoRA adapter;
	// the LoraConfig passed to NewTrainer is then ignored.
	Full bool
	// BaseName is written as base_model_name_or_path in saved adapters.
	BaseName string
	// MaxBatchTokens bounds the tokens of one packed micro-batch (0 means
	// 4096); larger calls are split. With prefix sharing a shared prefix
	// counts once.
	MaxBatchTokens int
	// MaxActivationBytes bounds the activations one micro-batch caches for
	// the backward pass (0 means DefaultMaxActivationBytes; negative is an
	// error): about (Layers+1)·(rows·(4·Dim + 2·QDim + 2·KVDim + 4·Hidden
	// + ranks) + Heads·(query-key pairs)) values, see [activationElems]. It
	// bounds a call's memory for a large model, where 4,096 rows would
	// need many GiB. A single example, or a run sharing a prefix of two,
	// longer than the bound is still computed in one micro-batch.
	MaxActivationBytes int64
	// NoPrefixSharing turns shared-prefix packing off: every example is
	// computed in full. With sharing on (the default), runs of consecutive
	// examples whose inputs share a prefix of at least MinSharedPrefix
	// tokens (an RL group: one prompt, several completions) compute that
	// prefix once; outputs, losses and gradients are the same up to float
	// rounding.
	NoPrefixSharing bool
	// MinSharedPrefix is the shortest common prefix worth sharing (0 means
	// DefaultMinSharedPrefix); negative is an error.
	MinSharedPrefix int
}

// Output is the result of a forward or forward-backward pass: per example,
// the trainer's log-probability of each target token, and summed metrics
// ("loss:sum", "tokens:sum").
type Output struct {
	Logprobs [][]float64
	Metrics  map[string]float64
}

// Trainer trains a LoRA adapter on a frozen base model it shares read-only
// with its caller, or (with TrainerOptions.Full) a private copy of the base
// model itself. Gradients accumulate over
// ForwardBackward calls until OptimStep applies and clears them.
//
// A Trainer is not safe for concurrent use; the caller serializes calls (the
// rl backend queues them in submission order).
type Trainer[T Float] struct {
	cfg   Config
	base  *Model[T]
	ad    *Adapter[T] // nil in full mode
	gm    *Model[T]   // full mode gradients
	gad   *Adapter[T] // LoRA gradients
	ps    []param[T]
	step  int
	opts  TrainerOptions
	rope  rope[T]
	a     acts[T]
	dirty bool // gradients accumulated since the last step
}

// NewTrainer returns a trainer over base. In LoRA mode the trainer shares
// base read-only (one copy of the frozen weights per process, shared with
// samplers): the caller must not modify base while the trainer is in use.
// In full mode (TrainerOptions.Full) the trainer trains a private copy and
// base is not used afterwards. In LoRA mode it creates a fresh adapter from
// lora.
func NewTrainer[T Float](base *Model[T], lora LoraConfig, opts TrainerOptions) (*Trainer[T], error) {
	if err := base.Config.Validate(); err != nil {
		return nil, err
	}
	if opts.MaxActivationBytes < 0 {
		return nil, fmt.Errorf("%w: MaxActivationBytes %d must be ≥ 0 (0 means %d)", ErrConfig, opts.MaxActivationBytes, int64(DefaultMaxActivationBytes))
	}
	if opts.MinSharedPrefix < 0 {
		return nil, fmt.Errorf("%w: MinSharedPrefix %d must be ≥ 0 (0 means %d)", ErrConfig, opts.MinSharedPrefix, DefaultMinSharedPrefix)
	}
	t := &Trainer[T]{cfg: base.Config, base: base, opts: opts, rope: newRope[T](base.Config)}
	if opts.Full && base.Is16() {
		return nil, fmt.Errorf("%w: full-parameter training writes the weights; it needs a base in float, not in 16-bit matrices (Model.Widen)", ErrConfig)
	}
	if opts.Full {
		t.base = base.Clone()
		t.gm = newZeroModel[T](t.cfg)
	} else {
		ad, err := NewAdapter[T](t.cfg, lora)
		if err != nil {
			return nil, err
		}
		t.ad, t.gad = ad, newZeroAdapter[T](t.cfg, lora)
	}
	t.buildParams()
	return t, nil
}

func (t *Trainer[T]) buildParams() {
	t.ps = t.ps[:0]
	if t.opts.Full {
		w, g := t.base.tensors(), t.gm.tensors()
		for i := range w {
			t.ps = append(t.ps, param[T]{name: w[i].Name, shape: w[i].Shape, w: w[i].Data, g: g[i].Data,
				m: zeros[T](len(w[i].Data)), v: zeros[T](len(w[i].Data))})
		}
		return
	}
	w, g := t.ad.tensors(), t.gad.tensors()
	for i := range w {
		t.ps = append(t.ps, param[T]{name: w[i].Name, shape: w[i].Shape, w: w[i].Data, g: g[i].Data,
			m: zeros[T](len(w[i].Data)), v: zeros[T](len(w[i].Data))})
	}
}

// Config returns the model's shape.
func (t *Trainer[T]) Config() Config { return t.cfg }

// Step returns the number of optimizer steps applied.
func (t *Trainer[T]) Step() int { return t.step }

// Full reports whether the trainer trains the base weights.
func (t *Trainer[T]) Full() bool { return t.opts.Full }

// Adapter returns a deep copy of the current adapter (nil in full mode), a
// snapshot a sampler can serve while training goes on.
func (t *Trainer[T]) Adapter() *Adapter[T] {
	if t.ad == nil {
		return nil
	}
	return t.ad.Clone()
}

// Model returns a deep copy of the trainer's base weights (in full mode, the
// trained model).
func (t *Trainer[T]) Model() *Model[T] { return t.base.Clone() }

// NumTrainable returns the number of trained parameters.
func (t *Trainer[T]) NumTrainable() int {
	n := 0
	for _, p := range t.ps {
		n += len(p.w)
	}
	return n
}

// ForwardBackward computes the loss over data, returns per-token log-probs
// and "loss:sum", and adds the loss's gradient to the accumulated gradients.
// On error nothing has been accumulated (all inputs are validated first);
// a cancelled ctx between micro-batches leaves the gradients partly
// accumulated and is reported, so callers should discard the step.
func (t *Trainer[T]) ForwardBackward(ctx context.Context, data []Example, loss LossSpec) (Output, error) {
	return t.run(ctx, data, loss, true, false)
}

// Forward is ForwardBackward without gradients.
func (t *Trainer[T]) Forward(ctx context.Context, data []Example, loss LossSpec) (Output, error) {
	return t.run(ctx, data, loss, false, false)
}

// BaseLogprobs returns the log-probability of every target token under the
// base model with the adapter switched off (for KL penalties). Only Input
// and Targets of each example are read.
func (t *Trainer[T]) BaseLogprobs(ctx context.Context, data []Example) ([][]float64, error) {
	plain := make([]Example, len(data))
	for i, ex := range data {
		plain[i] = Example{Input: ex.Input, Targets: ex.Targets}
	}
	out, err := t.run(ctx, plain, LossSpec{Name: CrossEntropy}, false, true)
	return out.Logprobs, err
}

func (t *Trainer[T]) run(ctx context.Context, data []Example, loss LossSpec, grad, baseOnly bool) (Output, error) {
	fn, err := loss.compile()
	if err != nil {
		return Output{}, err
	}
	if len(data) == 0 {
		return Output{}, fmt.Errorf("%w: no examples", ErrInput)
	}
	for i := range data {
		if err := data[i].validate(t.cfg, loss.Name, i); err != nil {
			return Output{}, err
		}
	}
	nt := &net[T]{m: t.base, ad: t.ad, p: par{threads: t.opts.Threads}, rope: t.rope}
	if baseOnly {
		nt.ad = nil
	}
	if grad {
		nt.gm, nt.gad = t.gm, t.gad
	}
	out := Output{Logprobs: make([][]float64, len(data)), Metrics: map[string]float64{}}
	var lossSum float64
	tokens := 0
	inputs := make([][]int, len(data))
	for i := range data {
		inputs[i] = data[i].Input
		tokens += len(data[i].Input)
	}
	lim := t.limit()
	runs := t.plan(inputs, lim)
	var terms []term
	for rlo := 0; rlo < len(runs); {
		if err := ctx.Err(); err != nil {
			return Output{}, fmt.Errorf("engine: forward stopped after %d of %d examples: %w", runs[rlo].lo, len(data), err)
		}
		rhi, n, size := rlo, 0, 0
		for rhi < len(runs) {
			rs := runs[rhi].size(inputs)
			if rhi > rlo && !lim.fits(n+runs[rhi].rows, size+rs) {
				break
			}
			n, size = n+runs[rhi].rows, size+rs
			rhi++
		}
		lo, hi := runs[rlo].lo, runs[rhi-1].hi
		t.a.packRuns(inputs, runs[rlo:rhi], t.cfg.Heads)
		t.a.picks = t.a.picks[:0]
		for i := lo; i < hi; i++ {
			ex, rows := &data[i], t.a.rows[i-lo]
			for j := range ex.Input {
				t.a.picks = append(t.a.picks, pick{row: rows.row(j), target: ex.Targets[j]})
			}
		}
		nt.forwardPacked(&t.a)
		terms = terms[:0]
		k := 0
		for i := lo; i < hi; i++ {
			ex, rows := &data[i], t.a.rows[i-lo]
			lp := make([]float64, len(ex.Input))
			for j := range ex.Input {
				row := rows.row(j)
				p := t.a.pickLP[k]
				k++
				lp[j] = p
				l, dp := fn(ex, j, p)
				if !isFinite(l) || !isFinite(dp) {
					return Output{}, fmt.Errorf("%w: example %d token %d: loss %s is %v (trainer log-prob %v); check logprobs and advantages for extreme values",
						ErrInput, i, j, loss.Name, l, p)
				}
				lossSum += l
				terms = append(terms, term{row: row, target: ex.Targets[j], coef: dp})
			}
			out.Logprobs[i] = lp
		}
		if grad {
			nt.backward(&t.a, terms)
			t.dirty = true
		}
		rlo = rhi
	}
	out.Metrics["loss:sum"] = lossSum
	out.Metrics["tokens:sum"] = float64(tokens)
	return out, nil
}

// DefaultMaxActivationBytes is the activation memory of one micro-batch when
// TrainerOptions.MaxActivationBytes is zero: 1.5 GiB, about 460 rows of
// 256-token sequences for Qwen3-0.6B's shape with rank-16 LoRA on every
// projection (25,738 values per row per layer and 16 × 256 attention
// probabilities, 29 layers' worth in float32), and more than 4,096 rows
// for the default config.
const DefaultMaxActivationBytes = 1536 << 20

// activationElems returns the values one packed row caches per layer for
// the backward pass (layerActs without the attention probabilities, which
// cost Heads values per query-key pair), for an adapter whose projections'
// ranks in one block sum to ranks.
func activationElems(c Config, ranks int) int {
	e := 4*c.Dim + 2*c.QDim() + 2*c.KVDim() + 4*c.Hidden + 2 + ranks
	if c.QKNorm {
		e += c.QDim() + c.KVDim() + c.Heads + c.KVHeads
	}
	return e
}

// limit is the bound on one micro-batch: TrainerOptions.MaxBatchTokens rows
// and MaxActivationBytes of activations, spread over the layers and one more
// layer's worth for the backward pass's scratch and the final norm.
func (t *Trainer[T]) limit() batchLimit {
	rows := t.opts.MaxBatchTokens
	if rows <= 0 {
		rows = 4096
	}
	budget := t.opts.MaxActivationBytes
	if budget == 0 {
		budget = DefaultMaxActivationBytes
	}
	ranks := 0
	if t.ad != nil && len(t.ad.Blocks) > 0 {
		b := &t.ad.Blocks[0]
		for _, p := range []*LoraPair[T]{b.Q, b.K, b.V, b.O, b.Gate, b.Up, b.Down} {
			if p != nil {
				ranks += p.Rank
			}
		}
	}
	per := int64(sizeOf[T]()) * int64(t.cfg.Layers+1)
	elems := budget / per
	if elems > math.MaxInt32 {
		elems = math.MaxInt32
	}
	return batchLimit{rows: rows, elems: max(1, int(elems)), rowElems: activationElems(t.cfg, ranks), heads: t.cfg.Heads}
}

// plan splits inputs into the runs one call packs: shared-prefix runs
// within lim (see planRuns) unless TrainerOptions.NoPrefixSharing is set.
func (t *Trainer[T]) plan(inputs [][]int, lim batchLimit) []run {
	if t.opts.NoPrefixSharing {
		return singletonRuns(inputs)
	}
	minPrefix := t.opts.MinSharedPrefix
	if minPrefix == 0 {
		minPrefix = DefaultMinSharedPrefix
	}
	return planRuns(inputs, minPrefix, lim)
}

// OptimStep applies one AdamW step with the accumulated gradients, clears
// them and returns metrics ("grad_norm", the norm before clipping, and
// "step"). A step with no accumulated gradients still advances the moments
// and applies weight decay, as in PyTorch.
func (t *Trainer[T]) OptimStep(p AdamParams) (map[string]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	t.step++
	norm := adamStep(t.ps, p, t.step)
	t.dirty = false
	return map[string]float64{"grad_norm": norm, "step": float64(t.step)}, nil
}

// ZeroGrad discards accumulated gradients.
func (t *Trainer[T]) ZeroGrad() {
	for _, p := range t.ps {
		clear(p.g)
	}
	t.dirty = false
}
