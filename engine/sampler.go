package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
)

// SamplerOptions configure a [Sampler]. Zero values mean the defaults.
type SamplerOptions struct {
	// Threads bounds the goroutines one batched step (or, with Serial, one
	// Sample call) uses (0 or 1: one goroutine). Results do not depend on
	// it.
	Threads int
	// MaxConcurrent bounds the ComputeLogprobs and PromptTopK calls (and,
	// with Serial, the Sample calls) that compute at once (0 means 1);
	// further callers wait.
	MaxConcurrent int
	// TokenText is a token's text, which stop strings are matched against;
	// nil means the shipped character vocabulary's. A model with another
	// tokenizer (a Hugging Face folder) must set it, e.g. to the decoding
	// of the one token.
	TokenText func(id int) string

	// MaxBatch bounds the sequences decoding at once, over all calls
	// (default [DefaultMaxBatch]); further samples wait for a seat.
	MaxBatch int
	// MaxStepTokens bounds the rows of one batched step: one per decoding
	// sequence plus prompt rows (default max(512, MaxBatch+PrefillChunk));
	// it must be at least MaxBatch+PrefillChunk, so a step always has room
	// for one prompt chunk.
	MaxStepTokens int
	// PrefillChunk is the length of the chunks prompts are cached in
	// (default [DefaultPrefillChunk]): chunk boundaries lie at multiples of
	// it from the prompt's start, and a step takes only whole chunks.
	PrefillChunk int
	// KVCacheBytes bounds the KV cache memory of the calls in flight
	// (default [DefaultKVCacheBytes]). A call reserves its prompt's and
	// each running sample's worst case; calls that do not fit wait.
	KVCacheBytes int64
	// Serial computes every Sample call on its own, MaxConcurrent at a
	// time, with no batching across calls (the behaviour before continuous
	// batching, kept for comparison).
	Serial bool
}

// Defaults of [SamplerOptions].
const (
	DefaultMaxBatch     = 256
	DefaultPrefillChunk = 64
	DefaultKVCacheBytes = 1 << 30
)

// limits resolves the scheduler's options and checks them.
func (o SamplerOptions) limits() (schedLimits, error) {
	lim := schedLimits{maxBatch: o.MaxBatch, stepTokens: o.MaxStepTokens, chunk: o.PrefillChunk, budget: o.KVCacheBytes}
	if lim.maxBatch == 0 {
		lim.maxBatch = DefaultMaxBatch
	}
	if lim.chunk == 0 {
		lim.chunk = DefaultPrefillChunk
	}
	if lim.budget == 0 {
		lim.budget = DefaultKVCacheBytes
	}
	if lim.stepTokens == 0 {
		lim.stepTokens = max(512, lim.maxBatch+lim.chunk)
	}
	switch {
	case lim.maxBatch < 1 || lim.chunk < 1 || lim.budget < 1:
		return lim, fmt.Errorf("%w: sampler max batch %d, prefill chunk %d and KV cache bytes %d must be positive", ErrConfig, o.MaxBatch, o.PrefillChunk, o.KVCacheBytes)
	case lim.stepTokens < lim.maxBatch+lim.chunk:
		return lim, fmt.Errorf("%w: sampler max step tokens %d must be at least max batch %d + prefill chunk %d", ErrConfig, lim.stepTokens, lim.maxBatch, lim.chunk)
	}
	return lim, nil
}

// Sampler generates completions with a KV cache from a base model it
// shares read-only with its caller (and with any trainer over the same
// base: one copy of the frozen weights per process) and its own copies of
// the served adapters, applied unmerged (y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ, as the
// trainer computes it). It never sees a trainer's live tensors; it serves
// what [Sampler.SetAdapter], [Sampler.LoadAdapter] or [Sampler.Serve] gave
// it. The caller must not modify the base while the sampler is in use.
//
// # Continuous batching
//
// Sample calls share one scheduler: each step is one batched forward over
// the next token of every decoding sequence of every call in flight (each
// with its own prompt, n, sampling parameters, stop conditions, seed and
// adapter version), plus whole chunks of newcomers' prompts within the
// step's token budget, so a long prompt does not stall the decodes.
// Sequences join and leave at any step. Seats (MaxBatch) and KV cache
// memory (KVCacheBytes) are handed out first come, first served; calls
// that do not fit wait, honouring their context. A call whose prompt
// shares a prefix with another call in flight on the same version copies
// that call's cached rows instead of computing them, and calls with the
// same prompt share one cache. [Sampler.Stats] reports the scheduler's
// state and its memory.
//
// Results do not depend on batching: a call gives the same tokens and
// log-probs, bit for bit, alone or batched with any others, because every
// operation of a step is a function of one row alone and every matrix
// product (float32, float64, bfloat16 or float16 weights) is issued in
// blocks of at most 16 rows, a size at which the kernels compute each
// output row independently of the others (batch.go says how); the same
// holds for shared prompt rows. Results do differ, in the last bits, from
// the Serial path, whose products span all the rows of a call.
//
// # Versions
//
// A call is computed entirely with the adapter served when it started (or
// the one given to [Sampler.SampleWith]); serving another one affects
// calls that start after it, at once, while older adapters stay referenced
// until their calls drain. A step may mix versions: the base product is
// shared and each row gets its own version's LoRA delta.
//
// Sampler is safe for concurrent use. Its scheduler goroutine runs only
// while calls are in flight; [Sampler.Close] stops it.
type Sampler[T Float] struct {
	base *Model[T]
	cur  atomic.Pointer[Served[T]]
	sem  chan struct{}
	opts SamplerOptions
	rope rope[T]
	lp   *loop[T]
}

// Served is an adapter version as a sampler serves it: a private copy,
// never changed (nil adapter: the base alone). Get one from
// [Sampler.Prepare] or [Sampler.Served].
type Served[T Float] struct {
	ad *Adapter[T]
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
	lim, err := opts.limits()
	if err != nil {
		return nil, err
	}
	s := &Sampler[T]{base: base, sem: make(chan struct{}, max(1, opts.MaxConcurrent)), opts: opts, rope: newRope[T](base.Config)}
	s.cur.Store(&Served[T]{})
	s.lp = &loop[T]{core: newSched(base, lim, par{threads: opts.Threads}, s.rope)}
	return s, nil
}

// Config returns the model's shape.
func (s *Sampler[T]) Config() Config { return s.base.Config }

// SetAdapter serves a copy of ad (nil: the base alone), applied unmerged;
// ad must be an adapter for the sampler's model. It costs one copy of the
// adapter.
func (s *Sampler[T]) SetAdapter(ad *Adapter[T]) error {
	w, err := s.Prepare(ad)
	if err != nil {
		return err
	}
	s.Serve(w)
	return nil
}

// Prepare returns a served form of a copy of ad (nil: the base alone)
// without serving it; ad must be an adapter for the sampler's model. It
// costs one copy of the adapter.
func (s *Sampler[T]) Prepare(ad *Adapter[T]) (*Served[T], error) {
	if ad != nil {
		if err := ad.checkFor(s.base.Config); err != nil {
			return nil, err
		}
		ad = ad.Clone()
	}
	return &Served[T]{ad: ad}, nil
}

// Serve makes w (from [Sampler.Prepare] on this sampler) the version
// calls that start from now on use.
func (s *Sampler[T]) Serve(w *Served[T]) { s.cur.Store(w) }

// Served returns the version served now.
func (s *Sampler[T]) Served() *Served[T] { return s.cur.Load() }

// Stats returns the scheduler's figures as of the start of its latest
// step (after Close, its final ones).
func (s *Sampler[T]) Stats() SamplerStats { return s.lp.snapshot() }

// Close fails the Sample calls in flight with [ErrClosed], makes later
// ones fail too and returns when the scheduler goroutine has ended. Calls
// in Serial mode, ComputeLogprobs and PromptTopK are not affected.
func (s *Sampler[T]) Close() error {
	s.lp.close()
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

// Sample draws n completions of prompt with the version served now (see
// [Sampler.SampleWith]).
func (s *Sampler[T]) Sample(ctx context.Context, prompt []int, n int, p SamplingParams) ([]Sequence, []float64, error) {
	return s.SampleWith(ctx, s.Served(), prompt, n, p)
}

// SampleWith draws n completions of prompt with version w (from
// [Sampler.Prepare] or [Sampler.Served] on this sampler; nil: the one
// served now). It returns the sequences and, when p.PromptLogprobs is set,
// the prompt's log-probs (the first holds 0). The n samples share the
// prompt's cache. Cost: the prompt's rows once, then one row per generated
// token, in the sampler's batched steps; memory: 2·Layers·KVDim values per
// cached position (the prompt's once), reserved for the worst case while
// the call runs. When ctx ends the call returns at once and its sequences
// are dropped at the scheduler's next step.
func (s *Sampler[T]) SampleWith(ctx context.Context, w *Served[T], prompt []int, n int, p SamplingParams) ([]Sequence, []float64, error) {
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
	if w == nil {
		w = s.Served()
	}
	text := s.opts.TokenText
	if text == nil {
		text = tokenText
	}
	if s.opts.Serial {
		return s.sampleSerial(ctx, w, prompt, n, p, text)
	}
	c := &call[T]{w: w, prompt: slices.Clone(prompt), n: n, p: p, stop: ctx.Done()}
	c.p.StopStrings, c.p.StopTokens = slices.Clone(p.StopStrings), slices.Clone(p.StopTokens)
	c.prepare(cfg, text)
	if err := s.lp.submit(c); err != nil {
		return nil, nil, fmt.Errorf("engine: sample: %w", err)
	}
	return s.lp.wait(ctx, c)
}

// sampleSerial runs one call on its own (SamplerOptions.Serial).
func (s *Sampler[T]) sampleSerial(ctx context.Context, w *Served[T], prompt []int, n int, p SamplingParams, text func(int) string) ([]Sequence, []float64, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, nil, err
	}
	defer s.release()
	nt := &net[T]{m: s.base, ad: w.ad, p: par{threads: s.opts.Threads}, rope: s.rope}
	d := &decoder[T]{cfg: s.base.Config, nt: nt, tokenText: text}
	return d.run(ctx, prompt, n, p)
}

// PromptTopKWith is [Sampler.PromptTopK] under version w (nil: the one
// served now).
func (s *Sampler[T]) PromptTopKWith(ctx context.Context, w *Served[T], seq []int, k int) ([][]TokenLogprob, error) {
	cfg := s.base.Config
	if k < 1 || k > MaxPromptTopK {
		return nil, fmt.Errorf("%w: topk_prompt_logprobs %d must be in [1, %d]", ErrInput, k, MaxPromptTopK)
	}
	if err := checkPrompt(cfg, seq, 0); err != nil {
		return nil, err
	}
	if w == nil {
		w = s.Served()
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	a := acts[T]{topK: k}
	nt := &net[T]{m: s.base, ad: w.ad, p: par{threads: s.opts.Threads}, rope: s.rope}
	nt.forward(&a, [][]int{seq})
	out := make([][]TokenLogprob, len(seq))
	copy(out[1:], a.top[:len(seq)-1])
	return out, nil
}

// decoder is the state of one Sample call in Serial mode.
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
		if maxStop > 0 && stopStringEnds(&texts[i], d.tokenText(tok), maxStop, p.StopStrings) {
			sq.StopReason = StopStop
			return false
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

// stopStringEnds appends a sampled token's text to a sample's text and
// reports whether one of stops now appears in its tail (the last
// maxStop+4 bytes: longer than the longest stop string, so that a stop
// completed by this token is seen and older text is not searched again).
func stopStringEnds(text *strings.Builder, tok string, maxStop int, stops []string) bool {
	text.WriteString(tok)
	t := text.String()
	tail := t[max(0, len(t)-maxStop-4):]
	for _, st := range stops {
		if strings.Contains(tail, st) {
			return true
		}
	}
	return false
}
