package loop

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

func simDeps(data rollout.Dataset) Deps {
	return Deps{Trainer: sim.NewTrainer(sim.TrainerConfig{}), Samplers: []rl.Sampler{sim.NewSampler(sim.SamplerConfig{Tokens: 3})}, Dataset: data}
}

// TestResume: a run restored from a saved state continues the version
// counter, the step numbering and the data position.
func TestResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := newCountingDataset(100, 1)
	tr := sim.NewTrainer(sim.TrainerConfig{})
	var c collector
	deps := simDeps(data)
	deps.Trainer, deps.Observer = tr, c.observe
	l, err := New(rl.Config{GroupsPerBatch: 2, GroupSize: 2, Steps: 3, SaveEvery: 3}, deps)
	require.NoError(t, err)
	require.NoError(t, l.Run(ctx))
	first := c.all()
	last := first[len(first)-1]
	require.NotNil(t, last.Checkpoint, "SaveEvery=3 saves at step 3")
	assert.Equal(t, policy.State, last.Checkpoint.Kind)
	assert.Equal(t, policy.Version(3), last.Checkpoint.Version)
	require.GreaterOrEqual(t, last.DataPos, 6, "six prompts trained (more may be in flight)")

	// A new process: fresh trainer restored from the checkpoint, dataset
	// resumed at the recorded position.
	tr2 := sim.NewTrainer(sim.TrainerConfig{})
	_, err = tr2.LoadState(ctx, *last.Checkpoint, true).Wait(ctx)
	require.NoError(t, err)
	var c2 collector
	deps2 := simDeps(newCountingDataset(100, 1))
	deps2.Trainer, deps2.Observer, deps2.StartStep = tr2, c2.observe, 3
	l2, err := New(rl.Config{GroupsPerBatch: 2, GroupSize: 2, Steps: 2}, deps2)
	require.NoError(t, err)
	require.NoError(t, l2.Run(ctx))
	second := c2.all()
	require.Len(t, second, 2)
	assert.Equal(t, 3, second[0].Step)
	assert.Equal(t, policy.Version(4), second[0].Version)
	assert.Equal(t, policy.Version(5), second[1].Version)
	assert.Equal(t, policy.Version(3), l2.Report().Start)
}

func TestSubsteps(t *testing.T) {
	t.Parallel()
	var c collector
	deps := simDeps(newCountingDataset(1000, 1))
	deps.Observer = c.observe
	l, err := New(rl.Config{GroupsPerBatch: 4, GroupSize: 2, Substeps: 2, Steps: 3, MaxStaleness: 2}, deps)
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()))
	steps := c.all()
	require.Len(t, steps, 3)
	for i, m := range steps {
		assert.Equal(t, policy.Version(2*(i+1)), m.Version, "two optimizer steps per learner step")
		assert.LessOrEqual(t, m.MaxStaleness, 2)
	}
}

// TestSlowObserverNeverBlocks: an observer that blocks does not stop the
// learner; the run ends and the queued metrics are delivered afterwards.
func TestSlowObserverNeverBlocks(t *testing.T) {
	t.Parallel()
	release, last := make(chan struct{}), make(chan struct{})
	var seen atomic.Int32
	deps := simDeps(newCountingDataset(1000, 1))
	deps.Trainer = &onCall{Trainer: sim.NewTrainer(sim.TrainerConfig{}), optN: 20, onOptim: func() { close(last) }}
	deps.Observer = func(StepMetrics) {
		<-release
		seen.Add(1)
	}
	l, err := New(rl.Config{GroupsPerBatch: 2, GroupSize: 2, Steps: 20}, deps)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background()) }()
	// The learner submits its last optimizer step while the observer is
	// stuck on the first step's metrics (a learner the observer blocked
	// would never get there); Run waits for the observer only at the end.
	<-last
	assert.Zero(t, seen.Load())
	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, int32(20), seen.Load())
	assert.Equal(t, 20, l.Report().Steps)
}

// panicky panics in its reward on every third problem.
func panicky(n int) *rollout.SliceDataset {
	items := make([]rollout.Problem, n)
	for i := range items {
		boom := i%3 == 0
		items[i] = &rollout.SingleTurn{ID: fmt.Sprint(i), Prompt: rl.Tokens([]int{i}),
			Reward: func(context.Context, reward.Sample) (float64, error) {
				if boom {
					panic("reward bug")
				}
				return 1, nil
			}}
	}
	return rollout.NewSliceDataset(items, 0, 1)
}

func TestPanicsAreCountedAndRunGoesOn(t *testing.T) {
	t.Parallel()
	var c collector
	deps := simDeps(panicky(300))
	deps.Observer = c.observe
	l, err := New(rl.Config{GroupsPerBatch: 4, GroupSize: 2, Steps: 10, MaxStaleness: 1}, deps)
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()))
	rep := l.Report()
	assert.Equal(t, 10, rep.Steps)
	assert.Greater(t, rep.Rollout.Panics, int64(0))
	assert.Equal(t, rep.Rollout.Panics, rep.Failed)
	steps := c.all()
	assert.Equal(t, rep.Failed >= steps[len(steps)-1].Panics, true)
}

type alwaysFails struct{}

func (alwaysFails) Key() string { return "x" }
func (alwaysFails) Envs(context.Context, int) ([]rollout.Env, error) {
	return nil, errors.New("environment server down")
}

func TestFailureLimitStopsRun(t *testing.T) {
	t.Parallel()
	deps := simDeps(rollout.NewSliceDataset([]rollout.Problem{alwaysFails{}}, 0, -1))
	l, err := New(rl.Config{GroupsPerBatch: 1, GroupSize: 1, FailureLimit: 5}, deps)
	require.NoError(t, err)
	err = l.Run(context.Background())
	require.ErrorIs(t, err, rollout.ErrTooManyFailures)
	assert.Contains(t, err.Error(), "environment server down")
}

// guess is a two-turn environment: the second turn's reward depends on the
// first action.
type guess struct{ turn int }

func (g *guess) Observe(context.Context) (rl.ModelInput, rollout.StopCondition, error) {
	return rl.Tokens([]int{10 + g.turn, 11}), rollout.StopCondition{MaxTokens: 2}, nil
}

func (g *guess) Step(_ context.Context, action []int) (rollout.StepResult, error) {
	g.turn++
	return rollout.StepResult{Reward: float64(action[0] % 2), Done: g.turn == 2}, nil
}

type guessProblem struct{ id int }

func (p guessProblem) Key() string { return fmt.Sprint(p.id) }
func (p guessProblem) Envs(_ context.Context, n int) ([]rollout.Env, error) {
	envs := make([]rollout.Env, n)
	for i := range envs {
		envs[i] = &guess{}
	}
	return envs, nil
}

func TestMultiTurnThroughLoop(t *testing.T) {
	t.Parallel()
	items := make([]rollout.Problem, 50)
	for i := range items {
		items[i] = guessProblem{i}
	}
	var c collector
	deps := simDeps(rollout.NewSliceDataset(items, 0, 1))
	deps.Observer = c.observe
	l, err := New(rl.Config{GroupsPerBatch: 2, GroupSize: 3, Steps: 4}, deps)
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()))
	for _, m := range c.all() {
		assert.Equal(t, 6, m.Samples)
		assert.Equal(t, 6*2*2, m.Tokens, "two turns of two tokens per sample")
		assert.Zero(t, m.LogprobGap)
	}
}

// TestShutdownMidRun cancels a run with slow backends mid-step (as the
// trainer receives the third step's forward-backward) and checks that Run
// returns the cause, every goroutine ended (TestMain), and every accepted
// group is accounted for.
func TestShutdownMidRun(t *testing.T) {
	t.Parallel()
	for _, policyName := range []rl.StalePolicy{rl.Pace, rl.Drop, rl.Requeue} {
		cause := errors.New("operator pressed ctrl-c")
		ctx, cancel := context.WithCancelCause(context.Background())
		tr := &onCall{Trainer: sim.NewTrainer(sim.TrainerConfig{ForwardBackward: sim.Fixed(3 * time.Millisecond)}),
			fbN: 3, onFB: func() { cancel(cause) }}
		s := sim.NewSampler(sim.SamplerConfig{Latency: sim.LogNormal(2*time.Millisecond, 1, 3)})
		// The step in flight must be confirmed however slow the machine:
		// a grace no run reaches (a hang is go test's -timeout).
		l, err := New(rl.Config{GroupsPerBatch: 4, GroupSize: 2, MaxStaleness: 1, StalePolicy: policyName, ShutdownGrace: time.Hour},
			Deps{Trainer: tr, Samplers: []rl.Sampler{s}, Dataset: newCountingDataset(10_000, -1)})
		require.NoError(t, err)
		err = l.Run(ctx)
		require.ErrorIs(t, err, cause)
		rep := l.Report()
		assert.Equal(t, 3, rep.Steps, "policy %s: the step in flight is confirmed within the shutdown grace", policyName)
		st := rep.Buffer
		assert.Equal(t, st.Accepted, st.Trained+st.Dropped+st.Requeued+int64(len(rep.Leftover)), "policy %s", policyName)
		assert.Zero(t, st.Running)
	}
}

// failingTrainer fails the forward-backward of its third step.
type failingTrainer struct {
	*sim.Trainer
	calls atomic.Int32
}

var errDeviceLost = errors.New("device lost")

func (f *failingTrainer) ForwardBackward(ctx context.Context, d []rl.Datum, l rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	if f.calls.Add(1) == 3 {
		return rl.Failed[rl.ForwardBackwardOutput](errDeviceLost)
	}
	return f.Trainer.ForwardBackward(ctx, d, l)
}

func TestTrainerErrorReportsUnconfirmed(t *testing.T) {
	t.Parallel()
	deps := simDeps(newCountingDataset(1000, 1))
	deps.Trainer = &failingTrainer{Trainer: sim.NewTrainer(sim.TrainerConfig{})}
	l, err := New(rl.Config{GroupsPerBatch: 2, GroupSize: 2, Steps: 10, MaxStaleness: 1}, deps)
	require.NoError(t, err)
	err = l.Run(context.Background())
	require.ErrorIs(t, err, errDeviceLost)
	assert.Contains(t, err.Error(), "forward-backward at version 2")
	rep := l.Report()
	assert.Equal(t, 2, rep.Steps)
	assert.Len(t, rep.Unconfirmed, 2, "the failed step's groups are reported")
	st := rep.Buffer
	assert.Equal(t, st.Accepted, st.Trained+st.Dropped+st.Requeued+int64(len(rep.Leftover)))
}
