package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func constReward(v float64) reward.Func {
	return func(context.Context, reward.Sample) (float64, error) { return v, nil }
}

func runner(s rl.Sampler, n int) *Runner {
	return &Runner{Samplers: []rl.Sampler{s}, GroupSize: n, Params: rl.SamplingParams{MaxTokens: 4},
		Retry: Retry{Initial: time.Millisecond, Max: time.Millisecond}}
}

func TestSingleTurn(t *testing.T) {
	t.Parallel()
	s := sim.NewSampler(sim.SamplerConfig{Start: 3})
	var seen []string
	var mu sync.Mutex
	p := &SingleTurn{ID: "p1", Prompt: rl.Tokens([]int{1, 2}), Reference: "x",
		Decode: func(toks []int) string { return fmt.Sprint(len(toks)) },
		Reward: func(_ context.Context, s reward.Sample) (float64, error) {
			mu.Lock()
			seen = append(seen, s.Text+"/"+s.Reference)
			mu.Unlock()
			return float64(len(s.Tokens)), nil
		}}
	g, err := runner(s, 3).Rollout(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, "p1", g.Key)
	assert.Equal(t, policy.Version(3), g.Version)
	require.Len(t, g.Trajectories, 3)
	for _, tr := range g.Trajectories {
		require.Len(t, tr.Transitions, 1)
		assert.Equal(t, 4.0, tr.Return(), "reward = completion length = MaxTokens")
		assert.Len(t, tr.Transitions[0].Logprobs, 4)
	}
	assert.Equal(t, []string{"4/x", "4/x", "4/x"}, seen)
}

// counter is a multi-turn env: each turn's reward is the turn number; it
// ends after turns turns.
type counter struct {
	turns, turn int
	closed      *int
	mu          *sync.Mutex
}

func (c *counter) Observe(context.Context) (rl.ModelInput, StopCondition, error) {
	return rl.Tokens([]int{c.turn}), StopCondition{MaxTokens: 2}, nil
}

func (c *counter) Step(_ context.Context, action []int) (StepResult, error) {
	if len(action) != 2 {
		return StepResult{}, fmt.Errorf("action of %d tokens; the stop condition allows 2", len(action))
	}
	c.turn++
	return StepResult{Reward: float64(c.turn), Done: c.turn == c.turns, Metrics: map[string]float64{"turns": 1}}, nil
}

func (c *counter) Close() error {
	c.mu.Lock()
	*c.closed++
	c.mu.Unlock()
	return nil
}

type multi struct {
	turns  int
	closed int
	mu     sync.Mutex
	panic  bool
}

func (m *multi) Key() string { return "multi" }

func (m *multi) Envs(_ context.Context, n int) ([]Env, error) {
	if m.panic {
		panic("no envs today")
	}
	envs := make([]Env, n)
	for i := range envs {
		envs[i] = &counter{turns: m.turns, closed: &m.closed, mu: &m.mu}
	}
	return envs, nil
}

func TestMultiTurn(t *testing.T) {
	t.Parallel()
	const turns = 3
	m := &multi{turns: turns}
	g, err := runner(sim.NewSampler(sim.SamplerConfig{}), 4).Rollout(context.Background(), m)
	require.NoError(t, err)
	require.Len(t, g.Trajectories, 4)
	for _, tr := range g.Trajectories {
		require.Len(t, tr.Transitions, turns)
		assert.Equal(t, float64(turns*(turns+1)/2), tr.Return())
		assert.Equal(t, float64(turns), tr.Metrics["turns"])
	}
	assert.Equal(t, 4, m.closed, "every env closed")

	_, err = (&Runner{Samplers: []rl.Sampler{sim.NewSampler(sim.SamplerConfig{})}, GroupSize: 2, MaxTurns: 2,
		Params: rl.SamplingParams{MaxTokens: 4}}).Rollout(context.Background(), &multi{turns: 5})
	require.ErrorIs(t, err, ErrTooManyTurns)
}

// staggered gives env i a counter of i+1 turns, so that each trajectory
// shows which env produced it.
type staggered struct{ multi }

func (m *staggered) Envs(_ context.Context, n int) ([]Env, error) {
	envs := make([]Env, n)
	for i := range envs {
		envs[i] = &counter{turns: i + 1, closed: &m.closed, mu: &m.mu}
	}
	return envs, nil
}

func TestMultiTurnKeepsEnvOrder(t *testing.T) {
	t.Parallel()
	m := &staggered{}
	g, err := runner(sim.NewSampler(sim.SamplerConfig{}), 5).Rollout(context.Background(), m)
	require.NoError(t, err)
	require.Len(t, g.Trajectories, 5)
	for i, tr := range g.Trajectories {
		assert.Len(t, tr.Transitions, i+1, "trajectory %d comes from env %d", i, i)
	}
	assert.Equal(t, 5, m.closed, "every env closed")
}

// untilDeadline returns a channel closed at nine tenths of the time left
// before the test binary's deadline (-timeout), or never without one. A test
// waiting for an event that a bug would prevent waits on it too, and fails
// instead of hanging.
func untilDeadline(t *testing.T) <-chan struct{} {
	ch := make(chan struct{})
	if d, ok := t.Deadline(); ok {
		timer := time.AfterFunc(time.Until(d)*9/10, func() { close(ch) })
		t.Cleanup(func() { timer.Stop() })
	}
	return ch
}

// failFast is a multi-turn problem whose env 0 fails its first step, while
// every other env waits in Observe until its context ends.
type failFast struct {
	boom      error
	giveUp    <-chan struct{}
	cancelled atomic.Int32
	closed    atomic.Int32
}

func (f *failFast) Key() string { return "fail-fast" }

func (f *failFast) Envs(_ context.Context, n int) ([]Env, error) {
	envs := make([]Env, n)
	for i := range envs {
		envs[i] = &failFastEnv{f: f, first: i == 0}
	}
	return envs, nil
}

type failFastEnv struct {
	f     *failFast
	first bool
}

func (e *failFastEnv) Observe(ctx context.Context) (rl.ModelInput, StopCondition, error) {
	if e.first {
		return rl.Tokens([]int{1}), StopCondition{}, nil
	}
	select {
	case <-ctx.Done():
		e.f.cancelled.Add(1)
		return rl.ModelInput{}, StopCondition{}, ctx.Err()
	case <-e.f.giveUp:
		return rl.ModelInput{}, StopCondition{}, errors.New("never cancelled")
	}
}

func (e *failFastEnv) Step(context.Context, []int) (StepResult, error) { return StepResult{}, e.f.boom }

func (e *failFastEnv) Close() error { e.f.closed.Add(1); return nil }

// TestMultiTurnFailureCancelsGroup checks that one failed episode cancels
// the others and that the group's error is that failure, not the
// cancellations it caused.
func TestMultiTurnFailureCancelsGroup(t *testing.T) {
	t.Parallel()
	f := &failFast{boom: errors.New("env lost its connection"), giveUp: untilDeadline(t)}
	_, err := runner(sim.NewSampler(sim.SamplerConfig{}), 4).Rollout(context.Background(), f)
	require.ErrorIs(t, err, f.boom)
	assert.NotErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(3), f.cancelled.Load(), "the other three episodes were cancelled")
	assert.Equal(t, int32(4), f.closed.Load(), "every env closed")
}

// versionSampler reports a version that drops by one on each call, to
// check that the oldest version wins.
type versionSampler struct {
	rl.Sampler
	mu sync.Mutex
	v  policy.Version
}

func (s *versionSampler) Sample(ctx context.Context, p rl.ModelInput, n int, sp rl.SamplingParams) (rl.SampleOutput, error) {
	out, err := s.Sampler.Sample(ctx, p, n, sp)
	s.mu.Lock()
	out.Version = s.v
	s.v--
	s.mu.Unlock()
	return out, err
}

func TestGroupVersionIsOldest(t *testing.T) {
	t.Parallel()
	s := &versionSampler{Sampler: sim.NewSampler(sim.SamplerConfig{}), v: 10}
	g, err := runner(s, 2).Rollout(context.Background(), &multi{turns: 3})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(10-6+1), g.Version, "six calls: versions 10..5, oldest wins")
}

func TestPanicsBecomeErrors(t *testing.T) {
	t.Parallel()
	r := runner(sim.NewSampler(sim.SamplerConfig{}), 2)
	p := &SingleTurn{ID: "boom", Prompt: rl.Tokens([]int{1}), Reward: func(context.Context, reward.Sample) (float64, error) {
		panic("reward exploded")
	}}
	_, err := r.Rollout(context.Background(), p)
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "reward", pe.Where)
	assert.Contains(t, string(pe.Stack), "rollout_test.go")
	assert.Contains(t, err.Error(), `rollout "boom": rollout: panic in reward: reward exploded`)

	_, err = r.Rollout(context.Background(), &multi{turns: 1, panic: true})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "problem.Envs", pe.Where)
	assert.Equal(t, int64(2), r.Stats().Panics)
}

type tempErr struct{}

func (tempErr) Error() string   { return "overloaded" }
func (tempErr) Temporary() bool { return true }

func TestTransientRetried(t *testing.T) {
	t.Parallel()
	s := sim.NewSampler(sim.SamplerConfig{Fault: func(call uint64) error {
		switch call {
		case 1:
			return fmt.Errorf("429: %w", rl.ErrTransient)
		case 2:
			return tempErr{}
		}
		return nil
	}})
	r := runner(s, 1)
	_, err := r.Rollout(context.Background(), &SingleTurn{ID: "a", Prompt: rl.Tokens([]int{1}), Reward: constReward(1)})
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Stats().Retries)
	assert.Equal(t, uint64(3), s.Calls())

	permanent := errors.New("bad request")
	s2 := sim.NewSampler(sim.SamplerConfig{Fault: func(uint64) error { return permanent }})
	r2 := runner(s2, 1)
	_, err = r2.Rollout(context.Background(), &SingleTurn{ID: "a", Prompt: rl.Tokens([]int{1}), Reward: constReward(1)})
	require.ErrorIs(t, err, permanent)
	assert.Equal(t, uint64(1), s2.Calls(), "permanent errors are not retried")

	s3 := sim.NewSampler(sim.SamplerConfig{Fault: func(uint64) error { return rl.ErrTransient }})
	r3 := runner(s3, 1)
	r3.Retry.Attempts = 3
	_, err = r3.Rollout(context.Background(), &SingleTurn{ID: "a", Prompt: rl.Tokens([]int{1}), Reward: constReward(1)})
	require.ErrorIs(t, err, rl.ErrTransient)
	assert.Equal(t, uint64(4), s3.Calls(), "first try plus three retries")
}

func TestSliceDataset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	items := []Problem{&SingleTurn{ID: "a"}, &SingleTurn{ID: "b"}, &SingleTurn{ID: "c"}}
	d := NewSliceDataset(items, 1, 2)
	var got []string
	for {
		p, err := d.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, p.Key())
		if p.Key() == "b" && len(got) == 1 {
			d.Requeue(p)
		}
	}
	assert.Equal(t, []string{"b", "b", "c", "a", "b", "c"}, got)
	e, pos := d.Position()
	assert.Equal(t, 1, e)
	assert.Equal(t, 3, pos)
}

// sink is an in-memory Sink with unlimited admission.
type sink struct {
	mu     sync.Mutex
	groups []rl.Group
	fails  int
}

func (s *sink) Admit(ctx context.Context) (policy.Version, error) { return 0, ctx.Err() }
func (s *sink) Put(_ context.Context, g rl.Group) error {
	s.mu.Lock()
	s.groups = append(s.groups, g)
	s.mu.Unlock()
	return nil
}
func (s *sink) Fail(policy.Version) {
	s.mu.Lock()
	s.fails++
	s.mu.Unlock()
}

func TestWorkersDrainDataset(t *testing.T) {
	t.Parallel()
	var items []Problem
	for i := range 50 {
		items = append(items, &SingleTurn{ID: fmt.Sprint(i), Prompt: rl.Tokens([]int{i}), Reward: constReward(1)})
	}
	sk := &sink{}
	w := &Workers{N: 4, Runner: runner(sim.NewSampler(sim.SamplerConfig{}), 2), Dataset: NewSliceDataset(items, 0, 1), Sink: sk}
	require.NoError(t, w.Run(context.Background()))
	assert.Len(t, sk.groups, 50)
	keys := map[string]bool{}
	for _, g := range sk.groups {
		keys[g.Key] = true
		assert.NotNil(t, g.Source)
	}
	assert.Len(t, keys, 50, "every problem once")
	assert.Equal(t, 4, sk.fails, "each worker releases the admission it got when the data ran out")
}

func TestWorkersFailureLimit(t *testing.T) {
	t.Parallel()
	bad := &SingleTurn{ID: "bad", Prompt: rl.Tokens([]int{1}), Reward: func(context.Context, reward.Sample) (float64, error) {
		return 0, errors.New("judge unavailable")
	}}
	var failures int
	var mu sync.Mutex
	w := &Workers{N: 2, Runner: runner(sim.NewSampler(sim.SamplerConfig{}), 1), Dataset: NewSliceDataset([]Problem{bad}, 0, -1),
		Sink: &sink{}, FailureLimit: 10, OnFailure: func(error) { mu.Lock(); failures++; mu.Unlock() }}
	err := w.Run(context.Background())
	require.ErrorIs(t, err, ErrTooManyFailures)
	assert.Contains(t, err.Error(), "judge unavailable")
	mu.Lock()
	assert.GreaterOrEqual(t, failures, 10)
	mu.Unlock()
}

// putAdmitSink is a sink offering PutAdmit; it refuses groups once full is
// reached.
type putAdmitSink struct {
	sink
	calls atomic.Int64
	full  int
}

func (s *putAdmitSink) PutAdmit(ctx context.Context, g rl.Group) (policy.Version, bool, error) {
	s.calls.Add(1)
	s.mu.Lock()
	if s.full > 0 && len(s.groups) >= s.full {
		s.mu.Unlock()
		return 0, false, errors.New("full")
	}
	s.mu.Unlock()
	if err := s.Put(ctx, g); err != nil {
		return 0, false, err
	}
	v, err := s.Admit(ctx)
	return v, true, err
}

func TestWorkersUsePutAdmit(t *testing.T) {
	t.Parallel()
	var items []Problem
	for i := range 30 {
		items = append(items, &SingleTurn{ID: fmt.Sprint(i), Prompt: rl.Tokens([]int{i}), Reward: constReward(1)})
	}
	sk := &putAdmitSink{}
	w := &Workers{N: 3, Runner: runner(sim.NewSampler(sim.SamplerConfig{}), 2), Dataset: NewSliceDataset(items, 0, 1), Sink: sk}
	require.NoError(t, w.Run(context.Background()))
	assert.Len(t, sk.groups, 30)
	assert.Equal(t, int64(30), sk.calls.Load(), "every delivery went through PutAdmit")
	assert.Equal(t, 3, sk.fails)

	// A refused group stops its worker and is counted as abandoned.
	sk = &putAdmitSink{full: 5}
	w = &Workers{N: 1, Runner: runner(sim.NewSampler(sim.SamplerConfig{}), 2), Dataset: NewSliceDataset(items, 0, 1), Sink: sk}
	require.NoError(t, w.Run(context.Background()))
	assert.Len(t, sk.groups, 5)
	assert.Equal(t, int64(1), w.Abandoned())
}
