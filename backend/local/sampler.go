package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// SamplerOptions configure a Sampler. Zero values mean defaults.
type SamplerOptions struct {
	// Threads bounds the goroutines one batched step (with Serial, one
	// Sample call) uses (default 1).
	Threads int
	// Shelf is where in-process trainers publish (nil: load from the store
	// or folders only).
	Shelf *Shelf
	// Store resolves tinker:// references the shelf does not hold.
	Store *checkpoint.Store
	// Seed seeds the stream of per-call seeds used when a call gives none.
	Seed uint64
	// TokenText is the text of a token for stop strings (engine
	// SamplerOptions.TokenText); nil: the shipped character vocabulary's.
	TokenText func(id int) string
	// MaxBatch and KVCacheBytes bound the sequences decoding at once and
	// the KV cache memory of the calls in flight (engine.SamplerOptions;
	// 0: the engine's defaults).
	MaxBatch     int
	KVCacheBytes int64
	// Serial computes Sample calls one at a time, in arrival order, with
	// no batching across calls (the behaviour before continuous batching,
	// kept for comparison).
	Serial bool
}

// Sampler implements rl.Sampler on the embedded engine. Concurrent Sample
// calls are batched: the engine's scheduler runs the decode steps of every
// call in flight as one batched forward per step (see engine.Sampler), and
// a call's output is the same, bit for bit, as it would be alone. With
// SamplerOptions.Serial calls compute one at a time instead, in arrival
// order.
//
// Versions: a Sample call uses the version served when it starts, from its
// first token to its last, and reports that version. Load makes calls that
// start after it use the new version at once, without waiting for the calls
// in flight, which finish on the version they started with (the sampler
// keeps the older adapters while calls use them). It never reports a
// version it has not loaded. Safe for concurrent use.
type Sampler struct {
	opts SamplerOptions
	eng  *engine.Sampler[float32]

	cur    atomic.Pointer[servedVersion] // what new calls use
	loadMu sync.Mutex                    // serializes Loads
	seedMu sync.Mutex
	seeds  *rand.Rand
}

// servedVersion is a loaded version: its number and its adapter as the
// engine serves it.
type servedVersion struct {
	v policy.Version
	w *engine.Served[float32]
}

var _ rl.Sampler = (*Sampler)(nil)

// NewSampler returns a sampler serving base with a fresh adapter (version 0).
func NewSampler(base *engine.Model[float32], opts SamplerOptions) (*Sampler, error) {
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	eng, err := engine.NewSampler(base, engine.SamplerOptions{Threads: opts.Threads, TokenText: opts.TokenText,
		MaxBatch: opts.MaxBatch, KVCacheBytes: opts.KVCacheBytes, Serial: opts.Serial})
	if err != nil {
		return nil, fmt.Errorf("local: new sampler: %w", err)
	}
	s := &Sampler{opts: opts, eng: eng, seeds: rand.New(rand.NewPCG(opts.Seed, 0x5eed))}
	s.cur.Store(&servedVersion{w: eng.Served()})
	return s, nil
}

// Version returns the version the sampler serves: the one new calls use.
func (s *Sampler) Version() policy.Version { return s.cur.Load().v }

// Stats returns the engine scheduler's figures (calls waiting, sequences
// running, KV cache memory).
func (s *Sampler) Stats() engine.SamplerStats { return s.eng.Stats() }

// Close fails the calls in flight and stops the engine's scheduler
// goroutine; later Sample calls fail. A sampler that is not closed holds no
// goroutine while idle.
func (s *Sampler) Close() error { return s.eng.Close() }

// Sample implements rl.Sampler.
func (s *Sampler) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	if n < 1 {
		return rl.SampleOutput{}, fmt.Errorf("local: sample: num_samples %d must be positive", n)
	}
	if err := p.Validate(); err != nil {
		return rl.SampleOutput{}, fmt.Errorf("local: sample: %w", err)
	}
	var seed int64
	if p.Seed != nil {
		seed = *p.Seed
	} else {
		s.seedMu.Lock()
		seed = s.seeds.Int64()
		s.seedMu.Unlock()
	}
	sv := s.cur.Load() // the version this call uses throughout
	seqs, plp, err := s.eng.SampleWith(ctx, sv.w, prompt.AllTokens(), n, toSamplingParams(p, seed))
	if err != nil {
		return rl.SampleOutput{}, fmt.Errorf("local: sample: %w", err)
	}
	out := rl.SampleOutput{Sequences: make([]rl.Sequence, len(seqs)), PromptLogprobs: plp, Version: sv.v}
	for i, sq := range seqs {
		out.Sequences[i] = rl.Sequence{Tokens: sq.Tokens, Logprobs: sq.Logprobs, StopReason: rl.StopReason(sq.StopReason)}
	}
	if k := p.TopKPromptLogprobs; k > 0 {
		// A second pass over the prompt, under the same version: top-k
		// requests are rare (distillation), so the decode path stays as it
		// is.
		top, err := s.eng.PromptTopKWith(ctx, sv.w, prompt.AllTokens(), k)
		if err != nil {
			return rl.SampleOutput{}, fmt.Errorf("local: sample: topk_prompt_logprobs: %w", err)
		}
		out.TopKPromptLogprobs = make([][]rl.TokenLogprob, len(top))
		for i, row := range top {
			if row == nil {
				continue
			}
			out.TopKPromptLogprobs[i] = make([]rl.TokenLogprob, len(row))
			for j, e := range row {
				out.TopKPromptLogprobs[i][j] = rl.TokenLogprob{Token: e.Token, Logprob: e.Logprob}
			}
		}
	}
	return out, nil
}

// Load implements rl.Sampler: the shelf first, then the store or a folder.
func (s *Sampler) Load(ctx context.Context, ref policy.Ref) error {
	var (
		ad      *engine.Adapter[float32]
		version = ref.Version
	)
	if s.opts.Shelf != nil {
		if v, a, ok := s.opts.Shelf.Get(ref.URI); ok {
			ad, version = a, v
		}
	}
	if ad == nil {
		dir, v, err := resolveDir(s.opts.Store, ref)
		if err != nil {
			return fmt.Errorf("local: load %s: %w", ref.URI, err)
		}
		if ad, err = engine.LoadAdapter[float32](dir, s.eng.Config()); err != nil {
			return fmt.Errorf("local: load %s: %w", ref.URI, err)
		}
		version = v
	}
	w, err := s.eng.Prepare(ad)
	if err != nil {
		return fmt.Errorf("local: load %s: %w", ref.URI, err)
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if version < s.Version() {
		return fmt.Errorf("local: load %s: version %d is older than the served %d", ref.URI, version, s.Version())
	}
	s.cur.Store(&servedVersion{v: version, w: w})
	s.eng.Serve(w)
	return nil
}
