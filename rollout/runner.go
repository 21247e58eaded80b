package rollout

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/sourcegraph/conc/pool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
)

// ErrTooManyTurns fails an episode that did not end within MaxTurns.
var ErrTooManyTurns = errors.New("rollout: episode exceeded its turn limit")

// Retry configures retries of transient sampler errors.
type Retry struct {
	// Attempts is the most retries after the first try (default 5; < 0 =
	// none).
	Attempts int
	// Initial and Max bound the exponential back-off (defaults 20ms, 2s).
	Initial, Max time.Duration
}

// Runner rolls out one group at a time against the samplers. It is safe for
// concurrent use; its counters are shared by every caller.
type Runner struct {
	// Samplers serve the rollouts, used round-robin (at least one).
	Samplers []rl.Sampler
	// Params are the run's sampling parameters.
	Params rl.SamplingParams
	// GroupSize is the number of trajectories per group (≥ 1).
	GroupSize int
	// MaxTurns bounds a multi-turn episode (0 = rl.DefaultMaxTurns).
	MaxTurns int
	// Decode turns tokens into text for reward functions (nil = no text).
	Decode func([]int) string
	// Retry configures retries of transient sampler errors.
	Retry Retry
	// Tracer records a span per rollout (nil = the global provider's).
	// Rollout spans are children of the caller's span: they are recorded
	// only when ctx carries a recording span (wrap the run in one to trace
	// every sample), which keeps untraced runs free of per-rollout cost.
	Tracer trace.Tracer

	mem    sync.Pool // *groupMem of GroupSize trajectories
	tracer trace.Tracer
	once   sync.Once
	// The counters are written by every rollout: their own cache lines keep
	// the fields every rollout reads from bouncing between cores.
	_       [64]byte
	next    atomic.Uint64
	samples atomic.Int64
	retries atomic.Int64
	panics  atomic.Int64
	_       [32]byte
}

// Stats counts a Runner's work.
type Stats struct {
	Samples int64 // trajectories produced
	Retries int64 // sampler calls retried
	Panics  int64 // panics recovered in user code
}

// Stats returns the counters.
func (r *Runner) Stats() Stats {
	return Stats{Samples: r.samples.Load(), Retries: r.retries.Load(), Panics: r.panics.Load()}
}

func (r *Runner) init() {
	r.once.Do(func() {
		r.tracer = r.Tracer
		if r.tracer == nil {
			r.tracer = otel.Tracer("github.com/tandemrl/tandem/rollout")
		}
	})
}

// Rollout produces the group of problem p. Its Version is the oldest
// policy version that sampled any of its tokens; ID, Admitted and Source
// are left for the caller. An error means no group: the sampler failed
// (after retries), user code returned an error or panicked (a *PanicError),
// or ctx ended.
func (r *Runner) Rollout(ctx context.Context, p Problem) (g rl.Group, err error) {
	r.init()
	if len(r.Samplers) == 0 || r.GroupSize < 1 {
		return g, fmt.Errorf("rollout: runner needs a sampler and GroupSize ≥ 1 (have %d samplers, GroupSize %d)", len(r.Samplers), r.GroupSize)
	}
	span := trace.SpanFromContext(ctx) // non-recording unless traced
	if span.IsRecording() {
		ctx, span = r.tracer.Start(ctx, "rollout")
	}
	defer func() {
		if !span.IsRecording() {
			return
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else if span.IsRecording() {
			span.SetAttributes(attribute.String("key", g.Key), attribute.Int64("version", int64(g.Version)))
		}
		span.End()
	}()
	s := r.Samplers[0]
	if len(r.Samplers) > 1 {
		s = r.Samplers[r.next.Add(1)%uint64(len(r.Samplers))]
	}
	if st, ok := p.(*SingleTurn); ok {
		g, err = r.singleTurn(ctx, s, st)
	} else {
		g, err = r.multiTurn(ctx, s, p)
	}
	if err != nil {
		var pe *PanicError
		if errors.As(err, &pe) {
			r.panics.Add(1)
		}
		return rl.Group{}, fmt.Errorf("rollout %q: %w", p.Key(), err)
	}
	r.samples.Add(int64(len(g.Trajectories)))
	g.Key = p.Key()
	return g, nil
}

// sample calls the sampler, retrying transient errors with back-off.
func (r *Runner) sample(ctx context.Context, s rl.Sampler, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	out, err := s.Sample(ctx, prompt, n, p)
	if err == nil || !rl.IsTransient(err) || r.Retry.Attempts < 0 {
		return out, err
	}
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval = cmpOr(r.Retry.Initial, 20*time.Millisecond)
	eb.MaxInterval = cmpOr(r.Retry.Max, 2*time.Second)
	eb.MaxElapsedTime = 0
	attempts := r.Retry.Attempts
	if attempts == 0 {
		attempts = 5
	}
	b := backoff.WithContext(backoff.WithMaxRetries(eb, uint64(attempts)), ctx)
	b.Reset()
	for {
		d := b.NextBackOff()
		if d == backoff.Stop {
			if ctx.Err() != nil {
				return out, context.Cause(ctx)
			}
			return out, fmt.Errorf("gave up after %d retries: %w", attempts, err)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return out, context.Cause(ctx)
		}
		r.retries.Add(1)
		out, err = s.Sample(ctx, prompt, n, p)
		if err == nil || !rl.IsTransient(err) {
			return out, err
		}
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (r *Runner) singleTurn(ctx context.Context, s rl.Sampler, p *SingleTurn) (rl.Group, error) {
	n := r.GroupSize
	out, err := r.sample(ctx, s, p.Prompt, n, r.Params)
	if err != nil {
		return rl.Group{}, fmt.Errorf("sample: %w", err)
	}
	if len(out.Sequences) != n {
		return rl.Group{}, fmt.Errorf("sample: sampler returned %d sequences, asked for %d", len(out.Sequences), n)
	}
	decode := p.Decode
	if decode == nil {
		decode = r.Decode
	}
	m := r.groupMem(n)
	if err := scoreAll(ctx, p, decode, out, m.trans); err != nil {
		r.mem.Put(m)
		return rl.Group{}, err
	}
	for i := range m.trajs {
		// A recycled group already holds these values: rewriting them would
		// only make the learner's core fetch the lines again.
		t := &m.trajs[i]
		if len(t.Transitions) != 1 || &t.Transitions[0] != &m.trans[i] || t.Metrics != nil {
			*t = rl.Trajectory{Transitions: m.trans[i : i+1 : i+1]}
		}
	}
	return rl.Group{Version: out.Version, Replica: out.Replica, Trajectories: m.trajs, Memory: m}, nil
}

// groupMem is the memory of one single-turn group, recycled through the
// Runner's pool.
type groupMem struct {
	owner *Runner
	trajs []rl.Trajectory
	trans []rl.Transition
}

func (r *Runner) groupMem(n int) *groupMem {
	if m, ok := r.mem.Get().(*groupMem); ok && len(m.trajs) == n {
		return m
	}
	return &groupMem{owner: r, trajs: make([]rl.Trajectory, n), trans: make([]rl.Transition, n)}
}

// Recycle takes back the trajectory memory of a group this Runner
// produced, for reuse by later rollouts; other groups are left alone. After
// Recycle, g's Trajectories are gone and nothing may use the slices they
// held. The loop calls it once a step's trainer calls have resolved.
func (r *Runner) Recycle(g *rl.Group) {
	m, ok := g.Memory.(*groupMem)
	if !ok || m.owner != r {
		return
	}
	// Not cleared: every field is overwritten on reuse, and the slices a
	// pooled group still points to are kept alive only until then.
	g.Memory, g.Trajectories = nil, nil
	r.mem.Put(m)
}

// scoreAll scores every sequence of out and fills trans, with one recover
// for the whole group (a panic in the reward function fails the group).
func scoreAll(ctx context.Context, p *SingleTurn, decode func([]int) string, out rl.SampleOutput, trans []rl.Transition) (err error) {
	if p.Reward == nil {
		return errors.New("reward: problem has no reward function")
	}
	defer func() {
		if x := recover(); x != nil {
			err = &PanicError{Where: "reward", Value: x, Stack: debug.Stack()}
		}
	}()
	sm := reward.Sample{Prompt: firstChunk(p.Prompt), Reference: p.Reference}
	for i := range out.Sequences {
		seq := &out.Sequences[i]
		if len(seq.Logprobs) != len(seq.Tokens) {
			return fmt.Errorf("sample: sequence %d has %d tokens but %d logprobs", i, len(seq.Tokens), len(seq.Logprobs))
		}
		sm.Tokens, sm.Truncated = seq.Tokens, seq.StopReason == rl.StopLength
		if decode != nil {
			sm.Text = decode(seq.Tokens)
		}
		rw, err := p.Reward(ctx, sm)
		if err != nil {
			return fmt.Errorf("reward: %w", err)
		}
		// Field by field: building the struct and copying it costs a
		// store-forwarding stall per sample.
		t := &trans[i]
		t.Observation, t.Action, t.Logprobs = p.Prompt, seq.Tokens, seq.Logprobs
		t.Reward, t.StopReason, t.Version = rw, seq.StopReason, out.Version
	}
	return nil
}

// firstChunk returns the prompt's tokens without copying when it has one
// chunk.
func firstChunk(m rl.ModelInput) []int {
	if len(m.Chunks) == 1 {
		return m.Chunks[0].Tokens
	}
	return m.AllTokens()
}

func (r *Runner) multiTurn(ctx context.Context, s rl.Sampler, p Problem) (rl.Group, error) {
	n := r.GroupSize
	envs, err := guard("problem.Envs", func() ([]Env, error) { return p.Envs(ctx, n) })
	if err != nil {
		return rl.Group{}, err
	}
	if len(envs) != n {
		for _, e := range envs {
			closeEnv(e)
		}
		return rl.Group{}, fmt.Errorf("problem.Envs returned %d environments, asked for %d", len(envs), n)
	}
	trajs := make([]rl.Trajectory, n)
	if n == 1 {
		if trajs[0], err = r.episode(ctx, s, envs[0]); err != nil {
			return rl.Group{}, err
		}
	} else {
		// One goroutine per episode, all waited for; the first failure
		// cancels the others' context (one failed episode fails the group).
		// Each result goes to its episode's index, so the group keeps env
		// order and firstReal can prefer the failure over the cancellations
		// it caused.
		errs := make([]error, n)
		episodes := pool.New().WithMaxGoroutines(n).WithContext(ctx).WithCancelOnError()
		for i, env := range envs {
			episodes.Go(func(ectx context.Context) error {
				trajs[i], errs[i] = r.episode(ectx, s, env)
				return errs[i]
			})
		}
		if episodes.Wait() != nil {
			return rl.Group{}, firstReal(errs)
		}
	}
	g := rl.Group{Trajectories: trajs}
	first := true
	for i := range trajs {
		for _, tr := range trajs[i].Transitions {
			if first || tr.Version < g.Version {
				g.Version, first = tr.Version, false
			}
		}
	}
	return g, nil
}

// firstReal prefers an error that is not the cancellation caused by
// another episode's failure.
func firstReal(errs []error) error {
	var fallback error
	for _, e := range errs {
		if e == nil {
			continue
		}
		if !errors.Is(e, context.Canceled) {
			return e
		}
		if fallback == nil {
			fallback = e
		}
	}
	return fallback
}

func (r *Runner) episode(ctx context.Context, s rl.Sampler, env Env) (rl.Trajectory, error) {
	defer closeEnv(env)
	maxTurns := r.MaxTurns
	if maxTurns <= 0 {
		maxTurns = rl.DefaultMaxTurns
	}
	var traj rl.Trajectory
	for turn := range maxTurns {
		var stop StopCondition
		obs, err := guard("env.Observe", func() (rl.ModelInput, error) {
			o, st, err := env.Observe(ctx)
			stop = st
			return o, err
		})
		if err != nil {
			return traj, fmt.Errorf("turn %d: %w", turn, err)
		}
		out, err := r.sample(ctx, s, obs, 1, stop.apply(r.Params))
		if err != nil {
			return traj, fmt.Errorf("turn %d: sample: %w", turn, err)
		}
		if len(out.Sequences) != 1 {
			return traj, fmt.Errorf("turn %d: sampler returned %d sequences, asked for 1", turn, len(out.Sequences))
		}
		seq := out.Sequences[0]
		res, err := guard("env.Step", func() (StepResult, error) { return env.Step(ctx, seq.Tokens) })
		if err != nil {
			return traj, fmt.Errorf("turn %d: %w", turn, err)
		}
		traj.Transitions = append(traj.Transitions, rl.Transition{Observation: obs, Action: seq.Tokens,
			Logprobs: seq.Logprobs, Reward: res.Reward, StopReason: seq.StopReason, Version: out.Version})
		for k, v := range res.Metrics {
			if traj.Metrics == nil {
				traj.Metrics = make(map[string]float64)
			}
			traj.Metrics[k] += v
		}
		if res.Done {
			return traj, nil
		}
	}
	return traj, fmt.Errorf("%w (%d turns)", ErrTooManyTurns, maxTurns)
}
