package sim

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// SamplerConfig sets a simulated sampler's behaviour.
type SamplerConfig struct {
	// Latency of one Sample call (nil = zero); calls overlap freely, like
	// a batching inference server.
	Latency Latency
	// Load is the latency of loading a version.
	Load Latency
	// Tokens is the completion length (default 8, at most MaxTokens).
	Tokens int
	// Vocab is the number of distinct tokens (default 256).
	Vocab int
	// Start is the version served before any Load.
	Start policy.Version
	// Seed varies the sampled tokens.
	Seed uint64
	// Static returns the same completions (n copies of one sequence) from
	// every call, sharing one read-only backing array built once, with the
	// log-probs of version Start whatever version serves the call: the
	// cheapest mode, for overhead benchmarks. Callers must not modify the
	// returned tokens or log-probs.
	Static bool
	// Fault, if set, is asked before every call (numbered from 1); a
	// non-nil error fails that call (wrap rl.ErrTransient to make it
	// retryable).
	Fault func(call uint64) error
}

// Sampler is a simulated rl.Sampler. It reports the version it has loaded:
// a call returns the version served when it started. It is safe for
// concurrent use.
type Sampler struct {
	cfg     SamplerConfig
	static  atomic.Pointer[staticOut]
	version atomic.Int64
	loads   atomic.Int64
	// calls is written by every call: its own cache line keeps the fields
	// every call reads from bouncing between cores.
	_     [64]byte
	calls atomic.Uint64
	_     [56]byte
}

var _ rl.Sampler = (*Sampler)(nil)

// NewSampler returns a sampler serving cfg.Start.
func NewSampler(cfg SamplerConfig) *Sampler {
	if cfg.Tokens <= 0 {
		cfg.Tokens = 8
	}
	if cfg.Vocab <= 0 {
		cfg.Vocab = 256
	}
	s := &Sampler{cfg: cfg}
	s.version.Store(int64(cfg.Start))
	return s
}

// Version returns the version served now.
func (s *Sampler) Version() policy.Version { return policy.Version(s.version.Load()) }

// Calls returns the number of Sample calls so far.
func (s *Sampler) Calls() uint64 { return s.calls.Load() }

// Loads returns the number of completed Load calls.
func (s *Sampler) Loads() int64 { return s.loads.Load() }

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Sample implements rl.Sampler: n completions of Tokens tokens (at most
// p.MaxTokens), stop reason "length".
func (s *Sampler) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	if n < 1 {
		return rl.SampleOutput{}, fmt.Errorf("sim: sample n=%d; must be ≥ 1", n)
	}
	v := policy.Version(s.version.Load())
	call := s.calls.Add(1)
	if s.cfg.Fault != nil {
		if err := s.cfg.Fault(call); err != nil {
			return rl.SampleOutput{}, err
		}
	}
	if err := sleep(ctx, draw(s.cfg.Latency)); err != nil {
		return rl.SampleOutput{}, err
	}
	m := s.cfg.Tokens
	if p.MaxTokens > 0 && p.MaxTokens < m {
		m = p.MaxTokens
	}
	if s.cfg.Static {
		return s.staticSample(v, n, m), nil
	}
	plen := prompt.Len()
	toks := make([]int, n*m)
	lps := make([]float64, n*m)
	seqs := make([]rl.Sequence, n)
	h := mix(s.cfg.Seed ^ call*0x9e3779b97f4a7c15)
	vocab := uint64(s.cfg.Vocab)
	for i := range seqs {
		t, l := toks[i*m:(i+1)*m:(i+1)*m], lps[i*m:(i+1)*m:(i+1)*m]
		for j := range t {
			h = mix(h + uint64(j+1))
			t[j] = int(h % vocab)
			l[j] = LogProb(v, t[j], plen+j)
		}
		seqs[i] = rl.Sequence{Tokens: t, Logprobs: l, StopReason: rl.StopLength}
	}
	return rl.SampleOutput{Sequences: seqs, Version: v}, nil
}

// Load implements rl.Sampler: after the load latency, calls that start
// serve ref.Version.
func (s *Sampler) Load(ctx context.Context, ref policy.Ref) error {
	if err := sleep(ctx, draw(s.cfg.Load)); err != nil {
		return err
	}
	s.version.Store(int64(ref.Version))
	s.loads.Add(1)
	return nil
}

// staticOut is the shared output of Static mode.
type staticOut struct {
	m    int
	seqs []rl.Sequence
}

func (s *Sampler) staticSample(v policy.Version, n, m int) rl.SampleOutput {
	st := s.static.Load()
	if st == nil || st.m != m || len(st.seqs) < n {
		toks := make([]int, m)
		lps := make([]float64, m)
		for j := range toks {
			toks[j] = int(mix(s.cfg.Seed+uint64(j)) % uint64(s.cfg.Vocab))
			lps[j] = LogProb(s.cfg.Start, toks[j], j)
		}
		seqs := make([]rl.Sequence, max(n, 64))
		for i := range seqs {
			seqs[i] = rl.Sequence{Tokens: toks, Logprobs: lps, StopReason: rl.StopLength}
		}
		st = &staticOut{m: m, seqs: seqs}
		s.static.Store(st)
	}
	return rl.SampleOutput{Sequences: st.seqs[:n:n], Version: v}
}
