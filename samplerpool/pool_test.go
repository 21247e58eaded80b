package samplerpool

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

var params = rl.SamplingParams{MaxTokens: 4}

type result struct {
	out     rl.SampleOutput
	replica string
	err     error
}

func sampleAsync(ctx context.Context, p *Pool) <-chan result {
	ch := make(chan result, 1)
	go func() {
		out, name, err := p.SampleReplica(ctx, rl.Tokens([]int{1, 2}), 2, params)
		ch <- result{out, name, err}
	}()
	return ch
}

func TestPoolReplicaDiesAndComesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newFake(), newFake()
	a.gate = make(chan error)
	p, clk, ev := testPool(t, Config{}, a, b)
	require.NoError(t, p.Start(ctx))
	defer p.Close()
	require.NoError(t, p.Load(ctx, ref(1)))

	// A call in flight on a when a dies is retried on b.
	res := sampleAsync(ctx, p)
	<-a.entered
	gate := a.gate
	a.set(func(f *fake) { f.down, f.gate = true, nil })
	gate <- errDown
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, "b", r.replica)
	assert.Equal(t, policy.Version(1), r.out.Version)

	// Two more failures eject a; each call still succeeds on b.
	for range 2 {
		out, name, err := p.SampleReplica(ctx, rl.Tokens([]int{1}), 1, params)
		require.NoError(t, err)
		assert.Equal(t, "b", name)
		assert.Equal(t, policy.Version(1), out.Version)
	}
	ev.wait(t, EventEjected, "a")
	s := p.Stats()
	assert.False(t, s.Replicas[0].Healthy)
	assert.Equal(t, int64(3), s.Replicas[0].Failures)
	assert.Equal(t, int64(3), s.Replicas[0].RetriedAway)
	assert.Equal(t, int64(3), s.Retries)
	assert.Equal(t, int64(3), s.Replicas[1].Calls)

	// A new version while a is out reaches b only.
	require.NoError(t, p.Load(ctx, ref(2)))
	assert.Equal(t, []policy.Version{1}, a.loaded())

	// The first probe finds a still down.
	clk.Advance(backoffStep)
	ev.wait(t, EventProbeFailed, "a")

	// a restarts without its adapters; the next probe re-loads version 2
	// and re-admits it.
	a.set(func(f *fake) { f.down, f.version = false, 0 })
	clk.Advance(backoffStep)
	got := ev.wait(t, EventReadmitted, "a")
	assert.Equal(t, policy.Version(2), got.Version)
	assert.Equal(t, []policy.Version{1, 2}, a.loaded())

	out, name, err := p.SampleReplica(ctx, rl.Tokens([]int{1}), 1, params)
	require.NoError(t, err)
	assert.Equal(t, "a", name)
	assert.Equal(t, policy.Version(2), out.Version)
	s = p.Stats()
	assert.True(t, s.Replicas[0].Healthy)
	assert.Equal(t, int64(1), s.Replicas[0].Readmissions)
	assert.Equal(t, int64(1), s.Replicas[0].ProbeFailures)
	assert.Equal(t, policy.Version(2), s.Replicas[0].Served)
	assert.Equal(t, 2, s.Healthy)
}

func TestPoolProbesWithSampleWithoutHealth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newFake(), newFake()
	p, clk, ev := testPool(t, Config{MaxFailures: 1}, noHealth{a}, b)
	require.NoError(t, p.Start(ctx))
	defer p.Close()
	a.set(func(f *fake) { f.down = true })
	_, name, err := p.SampleReplica(ctx, rl.Tokens([]int{1}), 1, params)
	require.NoError(t, err)
	assert.Equal(t, "b", name)
	ev.wait(t, EventEjected, "a")
	a.set(func(f *fake) { f.down = false })
	before := a.calls
	clk.Advance(backoffStep)
	ev.wait(t, EventReadmitted, "a")
	a.mu.Lock()
	assert.Equal(t, before+1, a.calls, "the probe was one Sample")
	a.mu.Unlock()
}

func TestPoolReplicasReportTheirOwnVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newFake(), newFake()
	b.gate = make(chan error)
	p, clk, ev := testPool(t, Config{MaxOutstanding: 1}, a, b)
	require.NoError(t, p.Start(ctx))
	defer p.Close()
	require.NoError(t, p.Load(ctx, ref(1)))

	// Version 2 fails on a: Load still succeeds, a is stale on 1.
	a.set(func(f *fake) { f.loadErr = errors.New("disk full") })
	require.NoError(t, p.Load(ctx, ref(2)))
	ev.wait(t, EventLoadFailed, "a")
	s := p.Stats()
	assert.True(t, s.Replicas[0].Stale)
	assert.Equal(t, policy.Version(2), s.Newest)

	// b (version 2) is preferred; while it is at its cap, a serves 1.
	onB := sampleAsync(ctx, p)
	<-b.entered
	r := <-sampleAsync(ctx, p)
	require.NoError(t, r.err)
	assert.Equal(t, "a", r.replica)
	assert.Equal(t, policy.Version(1), r.out.Version)
	b.gate <- nil
	r = <-onB
	require.NoError(t, r.err)
	assert.Equal(t, "b", r.replica)
	assert.Equal(t, policy.Version(2), r.out.Version)

	// The health loop re-loads a once its load works again.
	a.set(func(f *fake) { f.loadErr = nil })
	clk.Advance(backoffStep)
	got := ev.wait(t, EventLoaded, "a")
	assert.Equal(t, policy.Version(2), got.Version)
	s = p.Stats()
	assert.False(t, s.Replicas[0].Stale)
	assert.Equal(t, policy.Version(2), s.Replicas[0].Served)
}

func TestPoolLoadFailsEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newFake(), newFake()
	boom := errors.New("boom")
	a.loadErr, b.loadErr = boom, boom
	p, _, _ := testPool(t, Config{}, a, b)
	err := p.Load(ctx, ref(1))
	require.Error(t, err)
	assert.ErrorIs(t, err, boom)
	_, ok := p.Version()
	assert.False(t, ok)
}

func TestPoolNonTransientErrorIsReturnedAsIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newFake(), newFake()
	a.gate = make(chan error)
	p, _, _ := testPool(t, Config{}, a, b)
	bad := errors.New("prompt too long")
	res := sampleAsync(ctx, p)
	<-a.entered
	a.gate <- bad
	r := <-res
	assert.Same(t, bad, r.err)
	s := p.Stats()
	assert.Equal(t, int64(1), s.Calls)
	assert.Equal(t, int64(1), s.Errors)
	assert.Equal(t, int64(0), s.Retries)
}

func TestPoolRetriesAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fakes := []rl.Sampler{newFake(), newFake(), newFake(), newFake()}
	for _, f := range fakes {
		f.(*fake).down = true
	}
	p, _, _ := testPool(t, Config{Retries: 2}, fakes...)
	_, err := p.Sample(ctx, rl.Tokens([]int{1}), 1, params)
	assert.ErrorIs(t, err, errDown)
	s := p.Stats()
	assert.Equal(t, int64(3), s.Calls, "one try and two retries")
	assert.Equal(t, int64(2), s.Retries)
}

func TestPoolNoReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newFake()
	a.down = true
	p, _, _ := testPool(t, Config{MaxFailures: 1}, a)
	_, err := p.Sample(ctx, rl.Tokens([]int{1}), 1, params)
	assert.ErrorIs(t, err, errDown)
	_, err = p.Sample(ctx, rl.Tokens([]int{1}), 1, params)
	assert.ErrorIs(t, err, ErrNoReplica)
	assert.True(t, rl.IsTransient(err))
	assert.ErrorIs(t, p.Load(ctx, ref(1)), ErrNoReplica)
}

func TestPoolCancellation(t *testing.T) {
	t.Parallel()
	a := newFake()
	a.gate = make(chan error)
	p, _, _ := testPool(t, Config{MaxOutstanding: 1}, a)
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := sampleAsync(ctx1, p)
	<-a.entered
	// The second call waits for a slot and gives up with its context.
	ctx2, cancel2 := context.WithCancel(context.Background())
	second := sampleAsync(ctx2, p)
	cancel2()
	assert.ErrorIs(t, (<-second).err, context.Canceled)
	s := p.Stats()
	assert.Equal(t, int64(1), s.Calls)
	assert.Equal(t, 1, s.Outstanding)
	// Cancelling the call in flight counts nowhere.
	cancel1()
	assert.ErrorIs(t, (<-first).err, context.Canceled)
	s = p.Stats()
	assert.Equal(t, 0, s.Outstanding)
	assert.Equal(t, int64(0), s.Failures)
	assert.True(t, s.Replicas[0].Healthy)
}

func TestPoolCloseWaitsForProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newFake(), newFake()
	a.down = true
	a.healthEntered = make(chan struct{})
	p, clk, ev := testPool(t, Config{MaxFailures: 1}, a, b)
	require.NoError(t, p.Start(ctx))
	assert.ErrorIs(t, p.Start(ctx), ErrRunning)
	assert.ErrorIs(t, p.Run(ctx), ErrRunning)
	_, err := p.Sample(ctx, rl.Tokens([]int{1}), 1, params)
	require.NoError(t, err)
	ev.wait(t, EventEjected, "a")
	clk.Advance(backoffStep)
	<-a.healthEntered // the probe is in flight, blocked until cancelled
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	s := p.Stats()
	assert.False(t, s.Replicas[0].Healthy)
	assert.Equal(t, int64(0), s.Replicas[0].ProbeFailures, "a cut-off probe counts nowhere")
	// Run works again after Close, and ends with its context.
	rctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, p.Run(rctx), context.Canceled)
}

func TestPoolGap(t *testing.T) {
	t.Parallel()
	p, _, _ := testPool(t, Config{}, newFake(), newFake())
	p.RecordGap("b", 0.1)
	p.RecordGap("b", -0.3)
	p.RecordGap("nobody", 5)
	s := p.Stats()
	assert.Equal(t, int64(0), s.Replicas[0].GapCount)
	assert.InDelta(t, 0.2, s.Replicas[1].GapMean, 1e-12)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	f := newFake()
	for name, tc := range map[string]struct {
		reps []Replica
		cfg  Config
	}{
		"none":      {nil, Config{}},
		"unnamed":   {[]Replica{{Sampler: f}}, Config{}},
		"nil":       {[]Replica{{Name: "a"}}, Config{}},
		"duplicate": {[]Replica{{"a", f}, {"a", f}}, Config{}},
		"failures":  {[]Replica{{"a", f}}, Config{MaxFailures: -1}},
		"cap":       {[]Replica{{"a", f}}, Config{MaxOutstanding: -1}},
	} {
		_, err := New(tc.reps, tc.cfg)
		assert.Error(t, err, name)
	}
}

// reloader is a fake that can re-register the version it believes it
// serves (as backend/openai.Sampler after a restart).
type reloader struct {
	*fake
	mu      sync.Mutex
	reloads []policy.Version
}

func (r *reloader) Reload(ctx context.Context, ref policy.Ref) error {
	r.mu.Lock()
	r.reloads = append(r.reloads, ref.Version)
	r.mu.Unlock()
	return r.fake.Load(ctx, ref)
}

// Re-admission uses Reload when the replica has it: a replica ejected on
// the newest version, which it lost in a restart, gets it back although
// it believes it still serves it.
func TestReadmissionReloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := &reloader{fake: newFake()}, newFake()
	p, clk, ev := testPool(t, Config{MaxFailures: 1}, a, b)
	require.NoError(t, p.Start(ctx))
	defer p.Close()
	require.NoError(t, p.Load(ctx, ref(3)))
	a.set(func(f *fake) { f.down = true })
	_, name, err := p.SampleReplica(ctx, rl.Tokens([]int{1}), 1, params)
	require.NoError(t, err)
	assert.Equal(t, "b", name)
	ev.wait(t, EventEjected, "a")
	a.set(func(f *fake) { f.down, f.version = false, 0 })
	clk.Advance(backoffStep)
	got := ev.wait(t, EventReadmitted, "a")
	assert.Equal(t, policy.Version(3), got.Version)
	a.mu.Lock()
	assert.Equal(t, []policy.Version{3}, a.reloads)
	a.mu.Unlock()
}
