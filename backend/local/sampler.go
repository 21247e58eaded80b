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
	// Threads bounds the goroutines one Sample call uses (default 1).
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
}

// Sampler implements rl.Sampler on the embedded engine. It behaves like one
// machine: Sample calls compute one at a time (each on up to Threads
// goroutines), in arrival order; Load waits for the call computing, swaps
// the served version, and the calls after it use the new one. It never
// reports a version it has not loaded. Safe for concurrent use.
//
// Sample and Load block, so the compute turn is a lock taken by the
// calling goroutine rather than a serial.Queue (as the Trainer uses): a
// queued Sample whose ctx ended would return while its computation still
// ran on the queue's goroutine.
type Sampler struct {
	opts SamplerOptions
	eng  *engine.Sampler[float32]
	turn chan struct{} // one compute turn at a time: Sample or Load

	version atomic.Int64 // served version; written only holding turn
	seedMu  sync.Mutex
	seeds   *rand.Rand
}

var _ rl.Sampler = (*Sampler)(nil)

// NewSampler returns a sampler serving base with a fresh adapter (version 0).
func NewSampler(base *engine.Model[float32], opts SamplerOptions) (*Sampler, error) {
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	eng, err := engine.NewSampler(base, engine.SamplerOptions{Threads: opts.Threads, TokenText: opts.TokenText})
	if err != nil {
		return nil, fmt.Errorf("local: new sampler: %w", err)
	}
	return &Sampler{opts: opts, eng: eng, turn: make(chan struct{}, 1), seeds: rand.New(rand.NewPCG(opts.Seed, 0x5eed))}, nil
}

// Version returns the version the sampler serves.
func (s *Sampler) Version() policy.Version { return policy.Version(s.version.Load()) }

func (s *Sampler) acquire(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s *Sampler) release() { <-s.turn }

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
	if err := s.acquire(ctx); err != nil {
		return rl.SampleOutput{}, err
	}
	defer s.release()
	v := s.Version()
	seqs, plp, err := s.eng.Sample(ctx, prompt.AllTokens(), n, toSamplingParams(p, seed))
	if err != nil {
		return rl.SampleOutput{}, fmt.Errorf("local: sample: %w", err)
	}
	out := rl.SampleOutput{Sequences: make([]rl.Sequence, len(seqs)), PromptLogprobs: plp, Version: v}
	for i, sq := range seqs {
		out.Sequences[i] = rl.Sequence{Tokens: sq.Tokens, Logprobs: sq.Logprobs, StopReason: rl.StopReason(sq.StopReason)}
	}
	if k := p.TopKPromptLogprobs; k > 0 {
		// A second pass over the prompt, under the same weights (the turn
		// is held): top-k requests are rare (distillation), so the decode
		// path stays as it is.
		top, err := s.eng.PromptTopK(ctx, prompt.AllTokens(), k)
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
	if version < s.Version() {
		return fmt.Errorf("local: load %s: version %d is older than the served %d", ref.URI, version, s.Version())
	}
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if err := s.eng.SetAdapter(ad); err != nil {
		return fmt.Errorf("local: load %s: %w", ref.URI, err)
	}
	s.version.Store(int64(version))
	return nil
}
