package openai

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// Sampler implements rl.Sampler over one OpenAI-compatible inference
// server. Safe for concurrent use: Sample calls run in parallel (the
// server batches them); Load calls are serialized among themselves and do
// not wait for Sample calls.
type Sampler struct {
	opts    Options
	t       *transport
	d       dialect
	base    string
	maxLen  int
	loadTok chan struct{} // one Load at a time

	mu       sync.Mutex
	versions *versionSet
	unloads  int64
	unloadEr error // the latest failed unload

	seedMu sync.Mutex
	seeds  *rand.Rand
}

var _ rl.Sampler = (*Sampler)(nil)

// New checks the options, asks the server which base model it serves and
// its context length, and (unless Options.SkipLogprobsProbe) probes that
// its log-probs are of the distribution sampled from, refusing a vLLM
// server without --logprobs-mode processed_logprobs. The returned sampler
// serves the base model as version 0 until the first Load.
func New(ctx context.Context, opts Options) (*Sampler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	t := &transport{opts: opts}
	var d dialect
	switch opts.Dialect {
	case VLLM:
		d = &vllm{t: t}
	case SGLang:
		d = &sglang{t: t}
	}
	base, maxLen, err := d.info(ctx, opts.Model)
	if err != nil {
		return nil, err
	}
	if opts.MaxModelLen > 0 {
		maxLen = opts.MaxModelLen
	}
	s := &Sampler{
		opts: opts, t: t, d: d, base: base, maxLen: maxLen,
		loadTok:  make(chan struct{}, 1),
		versions: newVersionSet(base, opts.MaxLoadedVersions),
		seeds:    rand.New(rand.NewPCG(opts.Seed, 0x09e4a1)),
	}
	if !opts.SkipLogprobsProbe {
		if err := s.probe(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// probeTolerance is how far from 0 the probe accepts the log-prob of a
// token drawn with top_k 1 (exactly 0 after renormalization; fp16/bf16
// kernels may leave rounding).
const probeTolerance = 1e-4

// probeTokens is how many tokens the probe draws: a raw log-prob near 0
// at every one of them (a model certain at each step) is unlikely.
const probeTokens = 4

// probe draws probeTokens tokens from the base model with temperature 1
// and top_k 1: in processed mode each has log-prob 0 (the only token
// left), in raw mode the model's log-softmax, below 0.
func (s *Sampler) probe(ctx context.Context) error {
	r := genRequest{
		model: s.base, prompt: s.opts.ProbePrompt, n: 1, maxTokens: probeTokens, seed: 0,
		p: rl.SamplingParams{MaxTokens: probeTokens, Temperature: 1, TopK: 1},
	}
	if s.maxLen > 0 && len(r.prompt)+r.maxTokens > s.maxLen {
		return nil // a context too short to probe; nothing to decide
	}
	res, err := s.d.generate(ctx, r)
	if err != nil {
		return fmt.Errorf("openai: log-probs probe (set Options.SkipLogprobsProbe for a server that cannot answer it): %w", err)
	}
	got := res.seqs[0].Logprobs
	if len(got) == 0 {
		return fmt.Errorf("%w: the log-probs probe drew no tokens (ignore_eos was sent); "+
			"set Options.SkipLogprobsProbe to start without it", ErrMalformed)
	}
	for _, lp := range got {
		if lp < -probeTolerance {
			return &LogprobsError{Dialect: s.opts.Dialect, Got: got}
		}
	}
	return nil
}

// BaseModel is the base model's name on the server.
func (s *Sampler) BaseModel() string { return s.base }

// MaxModelLen is the context length Sample clamps to (0: unknown).
func (s *Sampler) MaxModelLen() int { return s.maxLen }

// Version is the version calls starting now sample from.
func (s *Sampler) Version() policy.Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.versions.currentVersion()
}

// Stats are counters of a Sampler.
type Stats struct {
	// Registered are the versions registered on the server, oldest
	// first (the base model not counted).
	Registered []policy.Version
	// Retries counts retried attempts; Unloads the adapters unloaded.
	Retries, Unloads int64
	// UnloadErr is the latest failed unload, nil if none.
	UnloadErr error
}

// Stats returns the sampler's counters.
func (s *Sampler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Registered: s.versions.registered(), Retries: s.t.retries.Load(), Unloads: s.unloads, UnloadErr: s.unloadEr}
}

// Sample implements rl.Sampler. It samples from the newest version loaded
// when it starts (the base model, version 0, before any Load), and that
// version stays registered on the server until the call returns. The n
// completions come from one request; sample i is seeded seed+i on both
// dialects (vLLM's n>1 fan-out does that itself, ParentRequest in
// vllm/v1/engine/parallel_sampling.py; SGLang gets one input per sample),
// the seed being p.Seed or, when nil, drawn from Options.Seed's stream.
// Servers do not promise the same draws across batch shapes. max_tokens is
// clamped to the
// context left after the prompt (none left: n empty sequences, stop
// reason length).
func (s *Sampler) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	if n < 1 {
		return rl.SampleOutput{}, fmt.Errorf("openai: sample: num_samples %d must be positive", n)
	}
	if err := p.Validate(); err != nil {
		return rl.SampleOutput{}, fmt.Errorf("openai: sample: %w", err)
	}
	toks := prompt.AllTokens()
	if len(toks) == 0 {
		return rl.SampleOutput{}, errors.New("openai: sample: the prompt is empty")
	}
	var seed int64
	if p.Seed != nil {
		seed = *p.Seed
	} else {
		s.seedMu.Lock()
		seed = s.seeds.Int64N(1 << 62)
		s.seedMu.Unlock()
	}
	maxTokens := p.MaxTokens
	if s.maxLen > 0 {
		maxTokens = min(maxTokens, s.maxLen-len(toks))
	}

	s.mu.Lock()
	a := s.versions.acquire()
	s.mu.Unlock()
	defer s.release(a)

	out := rl.SampleOutput{Version: a.version}
	wantPrompt := p.PromptLogprobs || p.TopKPromptLogprobs > 0
	if maxTokens <= 0 {
		out.Sequences = make([]rl.Sequence, n)
		for i := range out.Sequences {
			out.Sequences[i] = rl.Sequence{Tokens: []int{}, Logprobs: []float64{}, StopReason: rl.StopLength}
		}
	} else {
		r := genRequest{model: a.name, prompt: toks, n: n, p: p, maxTokens: maxTokens, seed: seed}
		if wantPrompt && neutral(p) && s.opts.Dialect == VLLM {
			r.promptLogprobs, r.topK = true, p.TopKPromptLogprobs
		}
		res, err := s.d.generate(ctx, r)
		if err != nil {
			return rl.SampleOutput{}, err
		}
		out.Sequences = res.seqs
		if res.promptDone {
			out.PromptLogprobs, out.TopKPromptLogprobs = res.prompt, res.promptTopK
			wantPrompt = false
		}
	}
	if wantPrompt {
		// Processed prompt log-probs follow the call's temperature and
		// cuts; tandem's are the plain model's, so they come from a
		// neutral scoring request under the same adapter.
		res, err := s.d.scorePrompt(ctx, a.name, toks, p.TopKPromptLogprobs)
		if err != nil {
			return rl.SampleOutput{}, fmt.Errorf("openai: prompt log-probs: %w", err)
		}
		out.PromptLogprobs, out.TopKPromptLogprobs = res.prompt, res.promptTopK
	}
	if !p.PromptLogprobs {
		out.PromptLogprobs = nil
	}
	if p.TopKPromptLogprobs == 0 {
		out.TopKPromptLogprobs = nil
	}
	return out, nil
}

// release ends a call's use of a and unloads what that frees. The unloads
// run on the caller's goroutine, detached from its ctx (a cancelled call
// still frees its version), one attempt each, bounded by AdminTimeout.
func (s *Sampler) release(a *adapter) {
	s.mu.Lock()
	gone := s.versions.release(a)
	s.mu.Unlock()
	s.unloadAll(gone)
}

func (s *Sampler) unloadAll(gone []*adapter) {
	for _, g := range gone {
		err := s.d.unload(context.Background(), g.name)
		s.mu.Lock()
		if err != nil {
			s.unloadEr = err
		} else {
			s.unloads++
		}
		s.mu.Unlock()
	}
}

// Load implements rl.Sampler: it registers ref's adapter on the server
// under its own name (Options.AdapterName, never in place), and calls
// starting after Load returns sample from it. Loading the version served
// is a no-op; an older one is an error (ErrVersion). Versions beyond
// Options.MaxLoadedVersions are unloaded, oldest first, once no call uses
// them. The adapter's path is ref.URI without file://, through
// Options.PathRewrite, handed to the server as is. A load is retried on
// connection errors, 408, 429, 502–504 and vLLM's 404 "No adapter found"
// (a shared file system not yet showing the folder), not on other 4xx or
// 500 (vLLM's answer for rank and module errors).
func (s *Sampler) Load(ctx context.Context, ref policy.Ref) error {
	select {
	case s.loadTok <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-s.loadTok }()

	s.mu.Lock()
	cur := s.versions.currentVersion()
	s.mu.Unlock()
	switch {
	case ref.Version == cur:
		return nil
	case ref.Version < cur:
		return fmt.Errorf("%w: load %s: version %d, the sampler serves %d", ErrVersion, ref.URI, ref.Version, cur)
	}
	path, err := s.adapterPath(ref)
	if err != nil {
		return err
	}
	name := s.opts.AdapterName(ref)
	if name == "" || name == s.base {
		return fmt.Errorf("%w: AdapterName gave %q for version %d", ErrOptions, name, ref.Version)
	}
	if err := s.d.load(ctx, name, path); err != nil {
		return fmt.Errorf("openai: load version %d: %w", ref.Version, err)
	}
	s.mu.Lock()
	gone := s.versions.add(ref.Version, name, path)
	s.mu.Unlock()
	s.unloadAll(gone)
	return nil
}

// Reload registers ref's adapter on the server again when ref is the
// version the sampler serves, for a replica that restarted and lost its
// adapters (a Sample then fails with ErrModelNotServed); registering an
// adapter the server still holds is a no-op. Any other ref is a Load.
// samplerpool calls it when it re-admits a replica.
func (s *Sampler) Reload(ctx context.Context, ref policy.Ref) error {
	s.mu.Lock()
	cur := s.versions.currentVersion()
	a, ok := s.versions.lookup(ref.Version)
	s.mu.Unlock()
	if ref.Version != cur || !ok || ref.Version == 0 {
		return s.Load(ctx, ref)
	}
	select {
	case s.loadTok <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-s.loadTok }()
	if err := s.d.load(ctx, a.name, a.path); err != nil {
		return fmt.Errorf("openai: reload version %d: %w", ref.Version, err)
	}
	return nil
}

// adapterPath is the path the server is given for ref.
func (s *Sampler) adapterPath(ref policy.Ref) (string, error) {
	p := ref.URI
	if p == "" {
		return "", fmt.Errorf("openai: load version %d: the ref has no URI", ref.Version)
	}
	if strings.HasPrefix(p, "tinker://") {
		if s.opts.ResolveCheckpoint == nil {
			return "", fmt.Errorf("openai: load %s: a tinker:// checkpoint is not a path the server can read; "+
				"set Options.ResolveCheckpoint (e.g. through a checkpoint store the server shares), or export it to a folder the server sees", p)
		}
		dir, err := s.opts.ResolveCheckpoint(p)
		if err != nil {
			return "", fmt.Errorf("openai: load %s: %w", p, err)
		}
		p = dir
	}
	p = strings.TrimPrefix(p, "file://")
	q, err := s.opts.PathRewrite(p)
	if err != nil {
		return "", fmt.Errorf("openai: load %s: PathRewrite: %w", ref.URI, err)
	}
	return q, nil
}
