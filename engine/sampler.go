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
	// TokenText is a token's text, which stop strings are matched against;
	// nil means the shipped character vocabulary's. A model with another
	// tokenizer (a Hugging Face folder) must set it, e.g. to the decoding
	// of the one token.
	TokenText func(id int) string
}

// Sampler generates completions with a KV cache from a base model it
// shares read-only with its caller (and with any trainer over the same
// base: one copy of the frozen weights per process) and its own copy of the
// served adapter, applied unmerged (y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ, as the trainer
// computes it). It never sees a trainer's live tensors; it serves what
// [Sampler.SetAdapter] or [Sampler.LoadAdapter] gave it. The caller must
// not modify the base while the sampler is in use.
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
	ad *Adapter[T] // the served adapter, a private copy (nil: the base)
}

// NewSampler returns a sampler serving base, shared read-only, with no
// adapter. It copies no weights.
func NewSampler[T Float](base *Model[T], opts SamplerOptions) (*Sampler[T], error) {
	if err := base.Config.Validate(); err != nil {
		return nil, err
	}
	if opts.MaxConcurrent < 0 || opts.Threads < 0 {
		return nil, fmt.Errorf("%w: sampler threads %d and max concurrent %d must be non-negative", ErrConfig, opts.Threads, opts.MaxConcurrent)
	}
	s := &Sampler[T]{base: base, sem: make(chan struct{}, max(1, opts.MaxConcurrent)), opts: opts, rope: newRope[T](base.Config)}
	s.cur.Store(&served[T]{})
	return s, nil
}

// Config returns the model's shape.
func (s *Sampler[T]) Config() Config { return s.base.Config }

// SetAdapter serves a copy of ad (nil: the base alone), applied unmerged;
// ad must be an adapter for the sampler's model. It costs one copy of the
// adapter.
func (s *Sampler[T]) SetAdapter(ad *Adapter[T]) error {
	if ad != nil {
		if err := ad.checkFor(s.base.Config); err != nil {
			return err
		}
		ad = ad.Clone()
	}
	s.cur.Store(&served[T]{ad: ad})
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

// net returns a forward-only view of the served weights.
func (s *Sampler[T]) net() *net[T] {
	return &net[T]{m: s.base, ad: s.cur.Load().ad, p: par{threads: s.opts.Threads}, rope: s.rope}
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
	for i := 1; i < len(seq); i++ {
		a.picks = append(a.picks, pick{row: i - 1, target: seq[i]})
	}
	s.net().forward(&a, [][]int{seq})
	out := make([]float64, len(seq))
	copy(out[1:], a.pickLP)
	return out, nil
}

// Sample draws n completions of prompt. The n samples share the prompt's
// prefill and decode as one batch. It returns the sequences and, when
// p.PromptLogprobs is set, the prompt's log-probs (the first holds 0).
// Cost: one forward pass over the prompt, then one batched step per
// generated position; memory: 2·Layers·KVDim values per cached position
// (the prompt's once, shared by the n samples), and logits for at most
// [logitRows] samples at a time.
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
	d := &decoder[T]{cfg: cfg, nt: s.net(), tokenText: s.opts.TokenText}
	if d.tokenText == nil {
		d.tokenText = tokenText
	}
	return d.run(ctx, prompt, n, p)
}

// decoder is the state of one Sample call.
type decoder[T Float] struct {
	cfg       Config
	nt        *net[T]             // the served weights, forward only
	tokenText func(id int) string // for stop strings

	tp, maxNew int
	pk, pv     [][]T // per layer: the prompt's keys and values, tp×KVDim
	gk, gv     [][]T // per layer: generated keys and values, n×maxNew×KVDim

	x, xn, q, k, v, qn, kn, ao, y, g, u, h, logits, lu []T
}

func (d *decoder[T]) run(ctx context.Context, prompt []int, n int, p SamplingParams) ([]Sequence, []float64, error) {
	cfg := d.cfg
	d.tp = len(prompt)
	d.maxNew = min(p.MaxTokens, cfg.Context-d.tp)
	// Prefill: one forward pass over the prompt; keep its keys and values.
	var a acts[T]
	a.keepLast = true
	if p.PromptLogprobs {
		for i := 1; i < d.tp; i++ {
			a.picks = append(a.picks, pick{row: i - 1, target: prompt[i]})
		}
	}
	d.nt.forward(&a, [][]int{prompt})
	kvd := cfg.KVDim()
	d.pk, d.pv = make([][]T, cfg.Layers), make([][]T, cfg.Layers)
	d.gk, d.gv = make([][]T, cfg.Layers), make([][]T, cfg.Layers)
	for l := range cfg.Layers {
		d.pk[l], d.pv[l] = clone(a.layers[l].k), clone(a.layers[l].v)
		d.gk[l], d.gv[l] = zeros[T](n*d.maxNew*kvd), zeros[T](n*d.maxNew*kvd)
	}
	var promptLP []float64
	if p.PromptLogprobs {
		promptLP = make([]float64, d.tp)
		copy(promptLP[1:], a.pickLP)
	}
	last := a.last
	a = acts[T]{} // the prefill's activations are not needed any more

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
			texts[i].WriteString(d.tokenText(tok))
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
		d.head(len(active), func(r int, row []T) {
			if i := active[r]; step(i, row) {
				next = append(next, i)
			}
		})
		active = next
	}
	return seqs, promptLP, nil
}
