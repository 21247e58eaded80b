package buffer

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// errGone is the cause the tests cancel their contexts with.
var errGone = errors.New("test: gone")

// cancelled returns a context already ended with errGone.
func cancelled() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errGone)
	return ctx
}

// taken is what a Take run by takeAsync returned.
type taken struct {
	gs  []rl.Group
	err error
}

// takeAsync runs b.Take(ctx, step, nil) on a goroutine of its own; its
// result comes on the channel.
func takeAsync(ctx context.Context, b *Buffer, step policy.Version) <-chan taken {
	out := make(chan taken, 1)
	go func() {
		gs, err := b.Take(ctx, step, nil)
		out <- taken{gs, err}
	}()
	return out
}

// oneShort returns a buffer of batches of two, serving version 0, with two
// rollouts admitted and the first one's group put: one group short of a
// batch. adm holds the two admissions' versions.
func oneShort(t *testing.T) (b *Buffer, adm [2]policy.Version) {
	t.Helper()
	b, err := New(Config{GroupsPerBatch: 2}, nil)
	require.NoError(t, err)
	b.Serve(0)
	for i := range adm {
		adm[i], err = b.Admit(context.Background())
		require.NoError(t, err)
	}
	require.NoError(t, b.Put(context.Background(), rl.Group{Admitted: adm[0]}))
	return b, adm
}

// waitUntil returns once cond, read under b's lock, holds: for a goroutine
// to be queued in b. It yields rather than sleeps, so it takes as long as
// the goroutines take to get there, on any machine; no deadline is guessed
// (a goroutine that never gets there hangs the test until go test's own
// timeout reports it).
func waitUntil(b *Buffer, cond func() bool) {
	for {
		b.mu.Lock()
		ok := cond()
		b.mu.Unlock()
		if ok {
			return
		}
		runtime.Gosched()
	}
}

func TestPutBlocksWhenFull(t *testing.T) {
	t.Parallel()
	b, err := New(Config{GroupsPerBatch: 1, MaxStaleness: 5, Policy: rl.Drop, Limit: 1}, nil)
	require.NoError(t, err)
	b.Serve(0)
	ctx := context.Background()
	v, err := b.Admit(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Put(ctx, rl.Group{ID: 1, Admitted: v}))
	v, err = b.Admit(ctx)
	require.NoError(t, err)

	// Full: a Put that must wait, its ctx ended, fails and releases its
	// admission.
	require.ErrorIs(t, b.Put(cancelled(), rl.Group{ID: 2, Admitted: v}), errGone)
	st := b.Stats()
	assert.Equal(t, int64(1), st.Failed)
	assert.Equal(t, int64(0), st.Running)

	// A blocked Put proceeds once the learner takes.
	v, err = b.Admit(ctx)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- b.Put(ctx, rl.Group{ID: 3, Admitted: v}) }()
	waitUntil(b, func() bool { return b.put.Len() == 1 })
	select {
	case <-done:
		t.Fatal("Put returned while the buffer was full")
	default:
	}
	got, err := b.Take(ctx, 0, nil)
	require.NoError(t, err)
	assert.Equal(t, []uint64{0}, ids(got), "the first group accepted")
	require.NoError(t, <-done)
	assert.Equal(t, 1, b.Len())
}

func TestTakeWaitsCloseDrains(t *testing.T) {
	t.Parallel()
	b, err := New(Config{GroupsPerBatch: 2}, nil)
	require.NoError(t, err)
	ctx := context.Background()
	b.Serve(0)
	out := takeAsync(ctx, b, 0)
	for id := range uint64(2) {
		v, err := b.Admit(ctx)
		require.NoError(t, err)
		require.NoError(t, b.Put(ctx, rl.Group{ID: id, Admitted: v}))
	}
	r := <-out
	require.NoError(t, r.err)
	assert.Len(t, r.gs, 2)

	b.Serve(1)
	v, err := b.Admit(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Put(ctx, rl.Group{ID: 5, Admitted: v, Version: 1}))
	b.Close()
	_, err = b.Admit(ctx)
	require.ErrorIs(t, err, ErrClosed)
	_, err = b.Take(ctx, 1, nil)
	require.ErrorIs(t, err, ErrClosed, "closed, nothing running, one group short of a batch")
	assert.Equal(t, []uint64{2}, ids(b.Drain()), "the third group accepted")
	st := b.Stats()
	assert.Equal(t, st.Accepted, st.Trained+st.Dropped+st.Requeued+st.Drained+st.Held)
}

func TestAdmitCancelUnchanged(t *testing.T) {
	t.Parallel()
	b, err := New(Config{GroupsPerBatch: 1}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { _, err := b.Admit(ctx); done <- err }()
	waitUntil(b, func() bool { return b.admit.Len() == 1 })
	cancel(errGone)
	require.ErrorIs(t, <-done, errGone)
	assert.Equal(t, Stats{}, b.Stats())
	assert.Zero(t, b.admit.Len())
}

// TestConcurrentRequeue runs workers with random delays against a learner
// under the requeue policy and checks that every group is accounted for and
// no trained group is over-stale.
func TestConcurrentRequeue(t *testing.T) {
	t.Parallel()
	const gpb, k, steps = 4, 1, 40
	var mu sync.Mutex
	var requeued []uint64
	b, err := New(Config{GroupsPerBatch: gpb, MaxStaleness: k, Policy: rl.Requeue, Limit: 8}, func(g rl.Group) {
		mu.Lock()
		requeued = append(requeued, g.ID)
		mu.Unlock()
	})
	require.NoError(t, err)
	var served sync.Mutex // the "sampler": version it serves
	var cur policy.Version
	b.Serve(0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var next uint64
	var idMu sync.Mutex
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				adm, err := b.Admit(ctx)
				if err != nil {
					return
				}
				for range (i*7 + w*3) % 5 { // vary the interleaving
					runtime.Gosched()
				}
				served.Lock()
				v := cur
				served.Unlock()
				idMu.Lock()
				id := next
				next++
				idMu.Unlock()
				if err := b.Put(ctx, rl.Group{ID: id, Admitted: adm, Version: max(v, adm)}); err != nil {
					return
				}
			}
		}()
	}
	trained := 0
	for s := range steps {
		gs, err := b.Take(ctx, policy.Version(s), nil)
		require.NoError(t, err)
		for _, g := range gs {
			require.LessOrEqual(t, g.Staleness(policy.Version(s)), int64(k))
		}
		trained += len(gs)
		served.Lock()
		cur = policy.Version(s + 1)
		served.Unlock()
		b.Serve(policy.Version(s + 1))
	}
	cancel()
	wg.Wait()
	b.Close()
	left := b.Drain()
	st := b.Stats()
	assert.Equal(t, int64(trained), st.Trained)
	mu.Lock()
	assert.Equal(t, st.Requeued, int64(len(requeued)))
	mu.Unlock()
	assert.Equal(t, st.Accepted, st.Trained+st.Dropped+st.Requeued+int64(len(left)))
	assert.Equal(t, st.Admitted, st.Accepted+st.Failed)
}

func TestPutAdmit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := New(Config{GroupsPerBatch: 1, MaxStaleness: 5, Policy: rl.Drop, Limit: 1}, nil)
	require.NoError(t, err)
	b.Serve(3)
	v, err := b.Admit(ctx)
	require.NoError(t, err)

	// Room: the group is accepted and the next admission granted at once.
	next, accepted, err := b.PutAdmit(ctx, rl.Group{Admitted: v, Version: v})
	require.NoError(t, err)
	assert.True(t, accepted)
	assert.Equal(t, policy.Version(3), next)
	assert.Equal(t, 1, b.Len())

	// Full: a PutAdmit that must wait, its ctx ended, refuses the group and
	// releases its admission.
	_, accepted, err = b.PutAdmit(cancelled(), rl.Group{Admitted: next, Version: next})
	require.ErrorIs(t, err, errGone)
	assert.False(t, accepted)
	st := b.Stats()
	assert.Equal(t, int64(1), st.Failed)
	assert.Equal(t, int64(0), st.Running)

	// Accepted, but the buffer closes before the next admission: Admit's
	// error, with the group kept.
	v, err = b.Admit(ctx)
	require.NoError(t, err)
	_, err = b.Take(ctx, 3, nil)
	require.NoError(t, err)
	b.Close()
	_, accepted, err = b.PutAdmit(ctx, rl.Group{Admitted: v, Version: v})
	require.ErrorIs(t, err, ErrClosed)
	assert.True(t, accepted)
	assert.Equal(t, 1, b.Len())
}
