package staleness

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAcquireCancelLeavesStateUnchanged(t *testing.T) {
	t.Parallel()
	g, err := NewGate(Config{GroupsPerBatch: 1, Pace: true})
	require.NoError(t, err)
	g.Serve(0)
	v, err := g.Acquire(context.Background())
	require.NoError(t, err)
	assert.Equal(t, policy.Version(0), v)
	before := g.Stats()

	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { _, err := g.Acquire(ctx); done <- err }()
	require.Eventually(t, func() bool { return g.Waiting() == 1 }, time.Second, time.Millisecond)
	cancel(cause)
	require.ErrorIs(t, <-done, cause)
	assert.Equal(t, before, g.Stats())
	assert.Equal(t, 0, g.Waiting())
}

func TestWaitersAdmittedInOrderOnServe(t *testing.T) {
	t.Parallel()
	const b = 3
	g, err := NewGate(Config{GroupsPerBatch: b, Pace: true})
	require.NoError(t, err)
	ctx := context.Background()
	results := make(chan policy.Version, 2*b)
	var wg sync.WaitGroup
	for range 2 * b {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := g.Acquire(ctx)
			assert.NoError(t, err)
			results <- v
		}()
	}
	require.Eventually(t, func() bool { return g.Waiting() == 2*b }, time.Second, time.Millisecond)
	g.Serve(0)
	for range b {
		assert.Equal(t, policy.Version(0), <-results)
	}
	assert.Equal(t, b, g.Waiting(), "k=0: the window holds one batch")
	for range b {
		g.Release(0, true)
	}
	require.NoError(t, g.TakeBatch(ctx))
	assert.Equal(t, b, g.Waiting(), "still nothing until the sampler serves version 1")
	g.Serve(1)
	for range b {
		assert.Equal(t, policy.Version(1), <-results)
	}
	wg.Wait()
}

func TestTakeBatchWaitsAndCancels(t *testing.T) {
	t.Parallel()
	g, err := NewGate(Config{GroupsPerBatch: 2, Pace: true})
	require.NoError(t, err)
	g.Serve(0)
	ctx := context.Background()
	for range 2 {
		_, err := g.Acquire(ctx)
		require.NoError(t, err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, g.TakeBatch(short), context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() { done <- g.TakeBatch(ctx) }()
	g.Release(0, true)
	g.Release(0, true)
	require.NoError(t, <-done)
	assert.Equal(t, int64(2), g.Stats().Trained)
}

// TestGateConcurrent runs workers and a learner against the gate under the
// race detector and checks the counters balance.
func TestGateConcurrent(t *testing.T) {
	t.Parallel()
	const b, k, steps = 4, 1, 50
	g, err := NewGate(Config{GroupsPerBatch: b, MaxStaleness: k, Pace: true})
	require.NoError(t, err)
	g.Serve(0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				v, err := g.Acquire(ctx)
				if err != nil {
					return
				}
				g.Release(v, (i+w)%7 != 0)
			}
		}()
	}
	for s := range steps {
		require.NoError(t, g.TakeBatch(ctx))
		g.Serve(policy.Version(s + 1))
	}
	cancel()
	wg.Wait()
	st := g.Stats()
	assert.Equal(t, int64(steps*b), st.Trained)
	assert.Equal(t, st.Admitted, st.Accepted+st.Failed)
	assert.Equal(t, st.Accepted-st.Trained, g.core.Ready())
}
