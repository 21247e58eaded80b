package weights

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuf is a log destination safe for concurrent use; written is closed
// by the first write.
type syncBuf struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{}
}

func newSyncBuf() *syncBuf { return &syncBuf{written: make(chan struct{})} }

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() == 0 && len(p) > 0 {
		close(s.written)
	}
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func run(t *testing.T, s *Syncer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

func TestPublishLoadAcknowledge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := sim.NewTrainer(sim.TrainerConfig{})
	samplers := []*sim.Sampler{sim.NewSampler(sim.SamplerConfig{}), sim.NewSampler(sim.SamplerConfig{Load: sim.Fixed(3 * time.Millisecond)})}
	var reg policy.Registry
	var acks []policy.Version
	var mu sync.Mutex
	s := &Syncer{Registry: &reg, Samplers: []Loader{samplers[0], samplers[1]}, OnServed: func(v policy.Version) {
		mu.Lock()
		acks = append(acks, v)
		mu.Unlock()
	}}
	stop := run(t, s)
	defer func() { require.NoError(t, stop()) }()

	_, ok := s.Served()
	assert.False(t, ok)
	ref, err := Publish(ctx, tr, &reg, "v0")
	require.NoError(t, err)
	require.NoError(t, s.WaitServed(ctx, ref.Version))
	for range 3 {
		_, err := tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
		require.NoError(t, err)
	}
	ref, err = Publish(ctx, tr, &reg, "v3")
	require.NoError(t, err)
	assert.Equal(t, policy.Version(3), ref.Version)
	require.NoError(t, s.WaitServed(ctx, 3))
	for _, sm := range samplers {
		assert.Equal(t, policy.Version(3), sm.Version(), "every sampler serves the acknowledged version")
	}
	v, ok := s.Served()
	assert.True(t, ok)
	assert.Equal(t, policy.Version(3), v)
	mu.Lock()
	assert.Equal(t, []policy.Version{0, 3}, acks)
	mu.Unlock()

	_, err = Publish(ctx, tr, &reg, "again")
	require.Error(t, err, "same version twice is refused by the registry")
}

type flaky struct {
	calls atomic.Int32
	fail  error
	n     int32
}

func (f *flaky) Load(context.Context, policy.Ref) error {
	if f.calls.Add(1) <= f.n {
		return f.fail
	}
	return nil
}

func TestTransientLoadRetried(t *testing.T) {
	t.Parallel()
	var reg policy.Registry
	l := &flaky{fail: rl.ErrTransient, n: 2}
	s := &Syncer{Registry: &reg, Samplers: []Loader{l}}
	stop := run(t, s)
	defer func() { require.NoError(t, stop()) }()
	require.NoError(t, reg.Publish(policy.Ref{Version: 1}))
	require.NoError(t, s.WaitServed(context.Background(), 1))
	assert.Equal(t, int32(3), l.calls.Load())
}

func TestPermanentLoadErrorStopsRun(t *testing.T) {
	t.Parallel()
	var reg policy.Registry
	boom := errors.New("adapter rank too large")
	s := &Syncer{Registry: &reg, Samplers: []Loader{&flaky{fail: boom, n: 100}}}
	require.NoError(t, reg.Publish(policy.Ref{Version: 1, URI: "sim://x"}))
	err := s.Run(context.Background())
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "load version 1 (sim://x)")
}

// TestWaitServedWatchdogAndCancel waits, through the log, for the watchdog's
// first line, then cancels: no guess at how long either takes.
func TestWaitServedWatchdogAndCancel(t *testing.T) {
	t.Parallel()
	var reg policy.Registry
	logs := newSyncBuf()
	s := &Syncer{Registry: &reg, Samplers: []Loader{sim.NewSampler(sim.SamplerConfig{})},
		Watchdog: time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- s.WaitServed(ctx, 7) }()
	<-logs.written
	stop := errors.New("test stops waiting")
	cancel(stop)
	err := <-done
	require.ErrorIs(t, err, stop, "the wait ends with ctx's cause")
	assert.Contains(t, err.Error(), "serve version 7")
	assert.Contains(t, logs.String(), "waiting for samplers to serve version")
	assert.Contains(t, logs.String(), "want=7")
}

// gated is a Loader whose loads wait for release, then return err; loaded
// is closed when its load has returned, cancelled records whether ctx had
// ended by then.
type gated struct {
	release   <-chan struct{}
	err       error
	loads     atomic.Int32
	cancelled atomic.Bool
	loaded    chan struct{}
}

func newGated(release <-chan struct{}, err error) *gated {
	return &gated{release: release, err: err, loaded: make(chan struct{})}
}

func (g *gated) Load(ctx context.Context, _ policy.Ref) error {
	<-g.release
	g.cancelled.Store(ctx.Err() != nil)
	if g.loads.Add(1) == 1 {
		defer close(g.loaded)
	}
	return g.err
}

// TestLoadFailureWaitsForEveryLoad checks the fan-out's contract: a failed
// load does not cancel the others (each sampler loads once, and TestMain's
// leak check finds no load left running), and the error names the
// lowest-numbered failing sampler, not the first to fail.
func TestLoadFailureWaitsForEveryLoad(t *testing.T) {
	t.Parallel()
	var reg policy.Registry
	release, now := make(chan struct{}), make(chan struct{})
	close(now)
	first, second := errors.New("first sampler's failure"), errors.New("second sampler's failure")
	// The last sampler fails at once, before any other load returns.
	ls := []*gated{newGated(release, nil), newGated(release, first), newGated(release, nil), newGated(now, second)}
	s := &Syncer{Registry: &reg, Samplers: []Loader{ls[0], ls[1], ls[2], ls[3]}}
	require.NoError(t, reg.Publish(policy.Ref{Version: 1}))
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	<-ls[3].loaded
	close(release)
	err := <-done
	require.ErrorIs(t, err, first)
	assert.NotErrorIs(t, err, second)
	assert.Contains(t, err.Error(), "sampler 1:")
	for i, l := range ls {
		assert.Equal(t, int32(1), l.loads.Load(), "sampler %d loaded once", i)
		assert.False(t, l.cancelled.Load(), "sampler %d's load was not cancelled by another's failure", i)
	}
	_, ok := s.Served()
	assert.False(t, ok, "a failed load acknowledges nothing")
}
