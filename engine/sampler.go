package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
)

// SamplerOptions configure a [Sampler].
type SamplerOptions struct {
	// Threads bounds the goroutines one Sample call uses (0 or 1: the
	// caller's goroutine only). Results do not depend on it.
	Threads int
	// MaxConcurrent bounds the Sample and ComputeLogprobs calls that compute
	// at once (0 means 1); further callers wait. A sampler uses at most
	// MaxConcurrent·Threads goroutines. With few samples per call, several
	// one-thread calls use cores better than one call on several threads.
	MaxConcurrent int
}

// Sampler generates completions with a KV cache from its own copy of the
// weights: a private copy of the base with the served adapter merged in. It
// never sees a trainer's live tensors; it serves what [Sampler.SetAdapter]
// or [Sampler.LoadAdapter] gave it.
//
// Sampler is safe for concurrent use. At most MaxConcurrent calls compute at
// once (each using up to Threads goroutines), so a sampler behaves like a
// machine of fixed size; waiting callers honour their context. SetAdapter affects calls
// that start after it returns; calls already running finish on the weights
// they began with.
type Sampler[T Float] struct {
	base *Model[T]
	cur  atomic.Pointer[served[T]]
	sem  chan struct{}
	opts SamplerOptions
	rope rope[T]
}

type served[T Float] struct {
	m  *Model[T]   // base with the adapter merged in
	ad *Adapter[T] // the served adapter (nil: the base)
}

// NewSampler returns a sampler serving a private copy of base with no adapter.
func NewSampler[T Float](base *Model[T], opts SamplerOptions) (*Sampler[T], error) {
	if err := base.Config.Validate(); err != nil {
		return nil, err
	}
	if opts.MaxConcurrent < 0 || opts.Threads < 0 {
		return nil, fmt.Errorf("%w: sampler threads %d and max concurrent %d must be non-negative", ErrConfig, opts.Threads, opts.MaxConcurrent)
	}
	s := &Sampler[T]{base: base.Clone(), sem: make(chan struct{}, max(1, opts.MaxConcurrent)), opts: opts, rope: newRope[T](base.Config)}
	s.cur.Store(&served[T]{m: s.base.Clone()})
	return s, nil
}

// Config returns the model's shape.
func (s *Sampler[T]) Config() Config { return s.base.Config }

// SetAdapter serves a copy of ad merged into the base (nil: the base alone).
// It costs one pass over the adapted weights.
func (s *Sampler[T]) SetAdapter(ad *Adapter[T]) error {
	if ad != nil {
		ad = ad.Clone()
	}
	m, err := Merge(s.base, ad)
	if err != nil {
		return err
	}
	s.cur.Store(&served[T]{m: m, ad: ad})
	return nil
}

// LoadAdapter reads a PEFT adapter folder (see [LoadAdapter]) and serves it.
func (s *Sampler[T]) LoadAdapter(dir string) error {
	ad, err := LoadAdapter[T](dir, s.base.Config)
	if err != nil {
		return err
	}
	return s.SetAdapter(ad)
}

// Adapter returns a copy of the served adapter, nil when serving the base.
func (s *Sampler[T]) Adapter() *Adapter[T] {
	if ad := s.cur.Load().ad; ad != nil {
		return ad.Clone()
	}
	return nil
}

func (s *Sampler[T]) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("engine: waiting for the sampler: %w", context.Cause(ctx))
	}
}

func (s *Sampler[T]) release() { <-s.sem }

// checkPrompt validates prompt tokens against the model; room is the number
// of tokens that must fit after it.
func checkPrompt(cfg Config, prompt []int, room int) error {
	if len(prompt) == 0 {
		return fmt.Errorf("%w: prompt is empty", ErrInput)
	}
	if len(prompt)+room > cfg.Context {
		return fmt.Errorf("%w: prompt has %d tokens; with %d more it exceeds the model's context of %d", ErrInput, len(prompt), room, cfg.Context)
	}
	if err := checkTokens(prompt, cfg.Vocab); err != nil {
		return fmt.Errorf("%w: prompt: %v", ErrInput, err)
	}
	return nil
}

// ComputeLogprobs returns the log-prob of each token of seq given the ones
// before it under the served weights (Tinker's compute_logprobs); the first
// token has none and holds 0.
func (s *Sampler[T]) ComputeLogprobs(ctx context.Context, seq []int) ([]float64, error) {
	cfg := s.base.Config
	if err := checkPrompt(cfg, seq, 0); err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	var a acts[T]
	nt := &net[T]{m: s.cur.Load().m, p: par{threads: s.opts.Threads}, rope: s.rope}
	nt.forward(&a, [][]int{seq})
	out := make([]float64, len(seq))
	for i := 1; i < len(seq); i++ {
		out[i] = a.logprob(cfg.Vocab, i-1, seq[i])
	}
	return out, nil
}

// Sample draws n completions of prompt. The n samples share the prompt's
// prefill and decode as one batch. It returns the sequences and, when
// p.PromptLogprobs is set, the prompt's log-probs (the first holds 0).
// Cost: one forward pass over the prompt, then one batched step per
// generated position; memory: 2·Layers·Dim values per cached position.
func (s *Sampler[T]) Sample(ctx context.Context, prompt []int, n int, p SamplingParams) ([]Sequence, []float64, error) {
	cfg := s.base.Config
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("engine: sample: %w", context.Cause(ctx))
	}
	if n < 1 || n > 4096 {
		return nil, nil, fmt.Errorf("%w: num_samples %d must be in [1, 4096]", ErrInput, n)
	}
	if err := p.Validate(cfg); err != nil {
		return nil, nil, err
	}
	if err := checkPrompt(cfg, prompt, 1); err != nil {
		return nil, nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, nil, err
	}
	defer s.release()
	d := &decoder[T]{cfg: cfg, m: s.cur.Load().m, p: par{threads: s.opts.Threads}, rope: s.rope}
	return d.run(ctx, prompt, n, p)
}

// decoder is the state of one Sample call.
type decoder[T Float] struct {
	cfg  Config
	m    *Model[T]
	p    par
	rope rope[T]

	tp, maxNew int
	pk, pv     [][]T // per layer: the prompt's keys and values, tp×Dim
	gk, gv     [][]T // per layer: generated keys and values, n×maxNew×Dim

	x, xn, q, k, v, ao, y, g, u, h, logits []T
	scores                                 []T
}

func (d *decoder[T]) run(ctx context.Context, prompt []int, n int, p SamplingParams) ([]Sequence, []float64, error) {
	cfg := d.cfg
	d.tp = len(prompt)
	d.maxNew = min(p.MaxTokens, cfg.Context-d.tp)
	// Prefill: one forward pass over the prompt; keep its keys and values.
	var a acts[T]
	nt := &net[T]{m: d.m, p: d.p, rope: d.rope}
	nt.forward(&a, [][]int{prompt})
	d.pk, d.pv = make([][]T, cfg.Layers), make([][]T, cfg.Layers)
	d.gk, d.gv = make([][]T, cfg.Layers), make([][]T, cfg.Layers)
	for l := range cfg.Layers {
		d.pk[l], d.pv[l] = clone(a.layers[l].k), clone(a.layers[l].v)
		d.gk[l], d.gv[l] = zeros[T](n*d.maxNew*cfg.Dim), zeros[T](n*d.maxNew*cfg.Dim)
	}
	var promptLP []float64
	if p.PromptLogprobs {
		promptLP = make([]float64, d.tp)
		for i := 1; i < d.tp; i++ {
			promptLP[i] = a.logprob(cfg.Vocab, i-1, prompt[i])
		}
	}
	last := clone(a.logits[(d.tp-1)*cfg.Vocab : d.tp*cfg.Vocab])

	seqs := make([]Sequence, n)
	rngs := make([]*rand.Rand, n)
	texts := make([]strings.Builder, n)
	ch := &chooser{p: p}
	active := make([]int, 0, n) // sample ids still generating
	lastTok := make([]int, n)
	maxStop := 0
	for _, st := range p.StopStrings {
		maxStop = max(maxStop, len(st))
	}
	// step consumes logits row for sample i and reports whether it goes on.
	step := func(i int, row []T) bool {
		tok, lp := choose(ch, row, rngs[i])
		sq := &seqs[i]
		sq.Tokens = append(sq.Tokens, tok)
		sq.Logprobs = append(sq.Logprobs, lp)
		lastTok[i] = tok
		if slices.Contains(p.StopTokens, tok) {
			sq.StopReason = StopStop
			return false
		}
		if maxStop > 0 {
			texts[i].WriteString(tokenText(tok))
			t := texts[i].String()
			tail := t[max(0, len(t)-maxStop-4):]
			for _, st := range p.StopStrings {
				if strings.Contains(tail, st) {
					sq.StopReason = StopStop
					return false
				}
			}
		}
		if len(sq.Tokens) >= d.maxNew {
			sq.StopReason = StopLength
			return false
		}
		return true
	}
	for i := range n {
		rngs[i] = rand.New(rand.NewPCG(uint64(p.Seed), uint64(i)))
		seqs[i].Tokens = make([]int, 0, d.maxNew)
		seqs[i].Logprobs = make([]float64, 0, d.maxNew)
		if step(i, last) {
			active = append(active, i)
		}
	}
	for t := 1; len(active) > 0; t++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("engine: sampling stopped at token %d: %w", t, context.Cause(ctx))
		}
		// Feed each active sample's last token at position tp+t−1 (cache
		// slot t−1) and read the next token's logits.
		d.decodeStep(active, lastTok, t-1)
		next := active[:0]
		for r, i := range active {
			if step(i, d.logits[r*cfg.Vocab:(r+1)*cfg.Vocab]) {
				next = append(next, i)
			}
		}
		active = next
	}
	return seqs, promptLP, nil
}
