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

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
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

func TestWaitServedWatchdogAndCancel(t *testing.T) {
	t.Parallel()
	var reg policy.Registry
	var logs syncBuf
	s := &Syncer{Registry: &reg, Samplers: []Loader{sim.NewSampler(sim.SamplerConfig{})},
		Watchdog: 2 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := s.WaitServed(ctx, 7)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "serve version 7")
	assert.Contains(t, logs.String(), "waiting for samplers to serve version")
	assert.Contains(t, logs.String(), "want=7")
}
