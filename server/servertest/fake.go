// Package servertest provides a small in-memory Backend for testing the
// server and its clients: a fake trainer whose numbers are simple closed
// forms (so tests can derive what to expect) and a fake sampler that
// serves the versions the trainer saved; a Store; and Server, a tandem
// server over them on an httptest address, restartable.
package servertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
)

// Vocab is the fake model's vocabulary size.
const Vocab = 1000

// Backend is a server.Backend keeping everything in memory. Its zero value
// is ready; it is safe for concurrent use.
type Backend struct {
	// Fail, when set, is asked before each trainer or sampler call (kind is
	// the call's name: forward_backward, optim_step, sample, …); a non-nil
	// error fails the call.
	Fail func(kind string) error
	// SampleDelay is how long each Sample call takes.
	SampleDelay time.Duration
	// Gate, when set, holds every Sample call until it is closed.
	Gate chan struct{}

	mu       sync.Mutex
	trainers map[string]*Trainer
	saved    map[string]snapshot // by Ref.URI
}

type snapshot struct {
	version policy.Version
	theta   float64
	base    string
}

var _ server.Backend = (*Backend)(nil)

// NewTrainer returns a fresh fake trainer at version 0.
func (b *Backend) NewTrainer(_ context.Context, spec server.TrainerSpec) (rl.Trainer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.trainers == nil {
		b.trainers = map[string]*Trainer{}
	}
	t := &Trainer{b: b, spec: spec}
	b.trainers[spec.Run] = t
	return t, nil
}

// NewSampler returns a fake sampler of base at version 0.
func (b *Backend) NewSampler(_ context.Context, base string) (rl.Sampler, error) {
	return &Sampler{b: b, base: base}, nil
}

// Trainer returns the trainer made for run, or nil.
func (b *Backend) Trainer(run string) *Trainer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.trainers[run]
}

func (b *Backend) fail(kind string) error {
	if b.Fail == nil {
		return nil
	}
	return b.Fail(kind)
}

func (b *Backend) save(uri string, s snapshot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.saved == nil {
		b.saved = map[string]snapshot{}
	}
	b.saved[uri] = s
}

func (b *Backend) load(uri string) (snapshot, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.saved[uri]
	if !ok {
		return snapshot{}, fmt.Errorf("servertest: nothing saved at %s", uri)
	}
	return s, nil
}

// Trainer is the fake trainer. Its one parameter theta starts at 0. For a
// target token t, logprob = -ln(Vocab) - theta·t/Vocab; forward_backward
// adds Σ weights to the pending gradient count; optim_step sets
// theta += learning_rate · pending, clears it, and increments the version.
// Calls run synchronously in submission order.
type Trainer struct {
	b    *Backend
	spec server.TrainerSpec

	mu       sync.Mutex
	theta    float64
	pending  float64
	version  policy.Version
	calls    []string
	loadedOp bool
}

// LogProb is the fake model's log-probability of token t at parameter theta.
func LogProb(theta float64, t int64) float64 {
	return -math.Log(Vocab) - theta*float64(t)/Vocab
}

// Calls returns the kinds of calls applied, in order.
func (t *Trainer) Calls() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.calls...)
}

// State returns theta and the version.
func (t *Trainer) State() (theta float64, v policy.Version) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.theta, t.version
}

// LoadedOptimizer reports whether the last LoadState asked for optimizer state.
func (t *Trainer) LoadedOptimizer() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loadedOp
}

func (t *Trainer) record(kind string) error {
	t.calls = append(t.calls, kind)
	return t.b.fail(kind)
}

func (t *Trainer) pass(kind string, data []rl.Datum, loss rl.Loss, grad bool) *rl.Future[rl.ForwardBackwardOutput] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.record(kind); err != nil {
		return rl.Failed[rl.ForwardBackwardOutput](err)
	}
	out := rl.ForwardBackwardOutput{Metrics: map[string]float64{}}
	var sum float64
	for _, d := range data {
		tt := d.LossFnInputs[rl.InputTargetTokens]
		w := d.LossFnInputs[rl.InputWeights]
		lp := make([]float64, len(tt.Ints))
		for i, tok := range tt.Ints {
			lp[i] = LogProb(t.theta, tok)
			wi := 1.0
			if len(w.Floats) == len(tt.Ints) {
				wi = w.Floats[i]
			}
			sum += -wi * lp[i]
			if grad {
				t.pending += wi
			}
		}
		out.LossFnOutputs = append(out.LossFnOutputs, map[string]rl.TensorData{rl.InputLogprobs: rl.FloatTensor(lp)})
	}
	out.Metrics["loss:sum"] = sum
	return rl.Resolved(out, nil)
}

// ForwardBackward computes the loss and accumulates the gradient count.
func (t *Trainer) ForwardBackward(_ context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return t.pass("forward_backward", data, loss, true)
}

// Forward computes the loss only.
func (t *Trainer) Forward(_ context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return t.pass("forward", data, loss, false)
}

// OptimStep applies the pending gradient count.
func (t *Trainer) OptimStep(_ context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.record("optim_step"); err != nil {
		return rl.Failed[rl.OptimStepOutput](err)
	}
	p = p.WithDefaults()
	t.theta += p.LearningRate * t.pending
	t.pending = 0
	t.version++
	return rl.Resolved(rl.OptimStepOutput{Version: t.version, Metrics: map[string]float64{"learning_rate:mean": p.LearningRate}}, nil)
}

func (t *Trainer) saveAs(kind policy.Kind, name string) *rl.Future[policy.Ref] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.record("save_" + string(kind)); err != nil {
		return rl.Failed[policy.Ref](err)
	}
	ref := policy.Ref{Run: t.spec.Run, Version: t.version, Name: name, Kind: kind,
		URI: "mem://" + t.spec.Run + "/" + string(kind) + "/" + name, Created: time.Now()}
	t.b.save(ref.URI, snapshot{version: t.version, theta: t.theta, base: t.spec.Base})
	return rl.Resolved(ref, nil)
}

// SaveForSampler saves theta for samplers.
func (t *Trainer) SaveForSampler(_ context.Context, name string) *rl.Future[policy.Ref] {
	return t.saveAs(policy.SamplerWeights, name)
}

// SaveState saves theta as training state.
func (t *Trainer) SaveState(_ context.Context, name string) *rl.Future[policy.Ref] {
	return t.saveAs(policy.State, name)
}

// LoadState restores a saved theta and version.
func (t *Trainer) LoadState(_ context.Context, ref policy.Ref, withOptimizer bool) *rl.Future[struct{}] {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.record("load_state"); err != nil {
		return rl.Failed[struct{}](err)
	}
	s, err := t.b.load(ref.URI)
	if err != nil {
		return rl.Failed[struct{}](err)
	}
	t.theta, t.version, t.pending, t.loadedOp = s.theta, s.version, 0, withOptimizer
	return rl.Resolved(struct{}{}, nil)
}

// Sampler is the fake sampler. Sequence i of a call is the tokens
// (Σprompt + seed + i + j) mod Vocab for j = 0, 1, …, each with log-prob
// LogProb(theta, token); it stops at a stop token or after max_tokens.
type Sampler struct {
	b    *Backend
	base string

	mu      sync.Mutex
	theta   float64
	version policy.Version
}

// ErrNoPrompt is returned for an empty prompt.
var ErrNoPrompt = errors.New("servertest: empty prompt")

// Load serves the version saved at ref.URI.
func (s *Sampler) Load(_ context.Context, ref policy.Ref) error {
	snap, err := s.b.load(ref.URI)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.theta, s.version = snap.theta, snap.version
	return nil
}

// Sample draws n deterministic sequences.
func (s *Sampler) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	if err := s.b.fail("sample"); err != nil {
		return rl.SampleOutput{}, err
	}
	if err := p.Validate(); err != nil {
		return rl.SampleOutput{}, err
	}
	toks := prompt.AllTokens()
	if len(toks) == 0 {
		return rl.SampleOutput{}, ErrNoPrompt
	}
	if s.b.Gate != nil {
		select {
		case <-s.b.Gate:
		case <-ctx.Done():
			return rl.SampleOutput{}, context.Cause(ctx)
		}
	}
	if s.b.SampleDelay > 0 {
		select {
		case <-time.After(s.b.SampleDelay):
		case <-ctx.Done():
			return rl.SampleOutput{}, context.Cause(ctx)
		}
	}
	s.mu.Lock()
	theta, v := s.theta, s.version
	s.mu.Unlock()
	sum := 0
	for _, t := range toks {
		sum += t
	}
	seed := 0
	if p.Seed != nil {
		seed = int(*p.Seed)
	}
	stop := map[int]bool{}
	for _, t := range p.StopTokens {
		stop[t] = true
	}
	out := rl.SampleOutput{Version: v}
	if p.PromptLogprobs { // only when asked, as the engine does
		out.PromptLogprobs = make([]float64, len(toks))
		for i := 1; i < len(toks); i++ {
			out.PromptLogprobs[i] = LogProb(theta, int64(toks[i]))
		}
	}
	if k := min(p.TopKPromptLogprobs, Vocab); k > 0 {
		// LogProb falls with the token id (theta ≥ 0), so the top k are
		// tokens 0 … k-1 at every position but the first.
		out.TopKPromptLogprobs = make([][]rl.TokenLogprob, len(toks))
		for i := 1; i < len(toks); i++ {
			for t := range k {
				out.TopKPromptLogprobs[i] = append(out.TopKPromptLogprobs[i], rl.TokenLogprob{Token: t, Logprob: LogProb(theta, int64(t))})
			}
		}
	}
	for i := range n {
		seq := rl.Sequence{StopReason: rl.StopLength}
		for j := range p.MaxTokens {
			tok := ((sum+seed+i+j)%Vocab + Vocab) % Vocab
			seq.Tokens = append(seq.Tokens, tok)
			seq.Logprobs = append(seq.Logprobs, LogProb(theta, int64(tok)))
			if stop[tok] {
				seq.StopReason = rl.StopStop
				break
			}
		}
		out.Sequences = append(out.Sequences, seq)
	}
	return out, nil
}
