package rollout

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
)

// Env is one episode of an environment. The rollout alternates Observe
// (what the model sees next, and when its turn should stop) and Step (the
// sampled action, answered with a reward and whether the episode is over).
// A single-turn problem is an Env whose first Step returns Done.
//
// An Env is used by one goroutine at a time. If it implements io.Closer,
// Close is called when the episode ends, however it ends.
type Env interface {
	Observe(ctx context.Context) (rl.ModelInput, StopCondition, error)
	Step(ctx context.Context, action []int) (StepResult, error)
}

// StopCondition overrides the run's sampling parameters for one turn: a
// positive MaxTokens replaces the run's, and stop tokens and strings are
// added to the run's.
type StopCondition struct {
	MaxTokens   int
	StopTokens  []int
	StopStrings []string
}

func (s StopCondition) apply(p rl.SamplingParams) rl.SamplingParams {
	if s.MaxTokens > 0 {
		p.MaxTokens = s.MaxTokens
	}
	if len(s.StopTokens) > 0 {
		p.StopTokens = append(append([]int(nil), p.StopTokens...), s.StopTokens...)
	}
	if len(s.StopStrings) > 0 {
		p.StopStrings = append(append([]string(nil), p.StopStrings...), s.StopStrings...)
	}
	return p
}

// StepResult is the environment's answer to an action.
type StepResult struct {
	Reward  float64
	Done    bool
	Metrics map[string]float64
}

// Problem is one dataset item; it yields the n environments of a group.
type Problem interface {
	// Key identifies the item (for logs, metrics and requeue accounting).
	Key() string
	// Envs returns n fresh environments for one group.
	Envs(ctx context.Context, n int) ([]Env, error)
}

// SingleTurn is the common problem: one prompt, one completion per sample,
// scored by a reward function. The Runner samples all completions of a
// group with one Sample call.
type SingleTurn struct {
	ID        string
	Prompt    rl.ModelInput
	Reference string
	Reward    reward.Func
	// Decode turns completion tokens into the text reward functions see;
	// nil falls back to the Runner's Decode.
	Decode func([]int) string
}

// Key implements Problem.
func (p *SingleTurn) Key() string { return p.ID }

// Envs implements Problem with one-step environments, for callers other
// than the Runner (which takes a faster path).
func (p *SingleTurn) Envs(_ context.Context, n int) ([]Env, error) {
	envs := make([]Env, n)
	for i := range envs {
		envs[i] = &oneStep{p: p}
	}
	return envs, nil
}

type oneStep struct {
	p    *SingleTurn
	done bool
}

func (e *oneStep) Observe(context.Context) (rl.ModelInput, StopCondition, error) {
	return e.p.Prompt, StopCondition{}, nil
}

func (e *oneStep) Step(ctx context.Context, action []int) (StepResult, error) {
	if e.done {
		return StepResult{}, fmt.Errorf("rollout: single-turn problem %q stepped twice", e.p.ID)
	}
	e.done = true
	s := reward.Sample{Prompt: e.p.Prompt.AllTokens(), Tokens: action, Reference: e.p.Reference}
	if e.p.Decode != nil {
		s.Text = e.p.Decode(action)
	}
	r, err := e.p.Reward(ctx, s)
	return StepResult{Reward: r, Done: true}, err
}

// Dataset supplies problems to the rollout workers. Implementations are
// safe for concurrent use.
type Dataset interface {
	// Next returns the next problem, or io.EOF when there are no more.
	Next(ctx context.Context) (Problem, error)
	// Requeue hands back a problem whose group became too stale, to be
	// returned by a later Next.
	Requeue(p Problem)
}

// SliceDataset serves a slice of problems in order, requeued ones first.
// It is safe for concurrent use.
type SliceDataset struct {
	mu       sync.Mutex
	items    []Problem
	pos      int
	requeued []Problem
	epochs   int
	epoch    int
}

// NewSliceDataset serves items starting at position start (to resume a
// run), cycling through them epochs times (0 or 1 = once; < 0 = forever).
func NewSliceDataset(items []Problem, start, epochs int) *SliceDataset {
	return &SliceDataset{items: items, pos: start, epochs: epochs}
}

// Next implements Dataset.
func (d *SliceDataset) Next(ctx context.Context) (Problem, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(d.requeued); n > 0 {
		p := d.requeued[0]
		d.requeued[0] = nil
		d.requeued = d.requeued[1:]
		return p, nil
	}
	if d.pos >= len(d.items) {
		if len(d.items) == 0 || (d.epochs >= 0 && d.epoch+1 >= max(d.epochs, 1)) {
			return nil, io.EOF
		}
		d.epoch++
		d.pos = 0
	}
	p := d.items[d.pos]
	d.pos++
	return p, nil
}

// Len returns the number of items in the slice: how many distinct problems
// the dataset serves (loop.Run sizes its ledger by it).
func (d *SliceDataset) Len() int { return len(d.items) }

// Requeue implements Dataset.
func (d *SliceDataset) Requeue(p Problem) {
	d.mu.Lock()
	d.requeued = append(d.requeued, p)
	d.mu.Unlock()
}

// Position returns the epoch and the index of the next item of the slice
// (requeued items aside): what a resumed run passes as start.
func (d *SliceDataset) Position() (epoch, pos int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.epoch, d.pos
}

// Pending returns the number of requeued problems not yet served again.
func (d *SliceDataset) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.requeued)
}

func closeEnv(e Env) {
	if c, ok := e.(io.Closer); ok {
		_ = c.Close()
	}
}
