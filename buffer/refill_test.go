package buffer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// awaitAsync runs b.AwaitRefill(ctx, seen) on a goroutine of its own and
// sends what it returned; an error fails t.
func awaitAsync(t *testing.T, ctx context.Context, b *Buffer, seen uint64) <-chan bool {
	out := make(chan bool, 1)
	go func() {
		more, err := b.AwaitRefill(ctx, seen)
		assert.NoError(t, err)
		out <- more
	}()
	return out
}

// Under drop and pace nothing comes back to the dataset: a worker that
// found it empty stops at once.
func TestAwaitRefillOnlyWithRequeue(t *testing.T) {
	t.Parallel()
	for _, p := range []rl.StalePolicy{rl.Drop, rl.Pace} {
		b, err := New(Config{GroupsPerBatch: 2, MaxStaleness: 1, Policy: p}, func(rl.Group) {})
		require.NoError(t, err)
		more, err := b.AwaitRefill(context.Background(), b.Refills())
		require.NoError(t, err)
		assert.False(t, more, "%s", p)
	}
}

// The end of a finite dataset with requeue: while a group is held that the
// learner has not taken, a worker that found the dataset empty waits; the
// learner takes what is held as a short batch, and then nothing can come
// back: the waiting worker stops, admissions and Take report ErrClosed.
func TestShortLastBatchThenClosed(t *testing.T) {
	t.Parallel()
	b, err := New(Config{GroupsPerBatch: 3, MaxStaleness: 1, Policy: rl.Requeue}, func(rl.Group) {})
	require.NoError(t, err)
	b.Serve(0)
	ctx := context.Background()
	for range 2 {
		v, err := b.Admit(ctx)
		require.NoError(t, err)
		require.NoError(t, b.Put(ctx, rl.Group{Admitted: v, Version: v}))
	}
	// A worker finds the dataset empty.
	v, err := b.Admit(ctx)
	require.NoError(t, err)
	seen := b.Refills()
	b.Fail(v)
	res := awaitAsync(t, ctx, b, seen)
	waitUntil(b, func() bool { return b.refill.Len() == 1 })
	select {
	case <-res:
		t.Fatal("the worker stopped while a group was held")
	default:
	}

	got, err := b.Take(ctx, 0, nil)
	require.NoError(t, err)
	assert.Len(t, got, 2, "the short last batch holds what was left")
	assert.False(t, <-res, "nothing can come back once the learner took it")
	_, err = b.Admit(ctx)
	require.ErrorIs(t, err, ErrClosed)
	_, err = b.Take(ctx, 1, nil)
	require.ErrorIs(t, err, ErrClosed)
	st := b.Stats()
	assert.Equal(t, int64(2), st.Trained)
	assert.Equal(t, int64(1), st.Steps)
}

// A waiting learner gets the short batch as soon as the last rollout ends.
func TestShortLastBatchGrantedToWaitingTake(t *testing.T) {
	t.Parallel()
	b, err := New(Config{GroupsPerBatch: 4, MaxStaleness: 2, Policy: rl.Requeue}, func(rl.Group) {})
	require.NoError(t, err)
	b.Serve(0)
	ctx := context.Background()
	v1, err := b.Admit(ctx)
	require.NoError(t, err)
	v2, err := b.Admit(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Put(ctx, rl.Group{Admitted: v1, Version: v1}))
	took := takeAsync(ctx, b, 0)
	waitUntil(b, func() bool { return b.taker.Len() == 1 })
	// Worker 2 finds the dataset empty and waits; its rollout is still
	// counted until it releases the admission, so nothing ends yet.
	seen := b.Refills()
	b.Fail(v2)
	parked := awaitAsync(t, ctx, b, seen)
	r := <-took
	require.NoError(t, r.err)
	assert.Len(t, r.gs, 1)
	assert.False(t, <-parked)
}

// A prompt that comes back (an over-stale group requeued) wakes a worker
// that found the dataset empty, and the learner does not end the data
// while the group is on its way back.
func TestRequeueWakesWaitingWorker(t *testing.T) {
	t.Parallel()
	handed := make(chan rl.Group, 1)
	release := make(chan struct{})
	b, err := New(Config{GroupsPerBatch: 2, MaxStaleness: 0, Policy: rl.Requeue}, func(g rl.Group) {
		handed <- g
		<-release // the dataset takes its time to receive the prompt
	})
	require.NoError(t, err)
	b.Serve(0)
	ctx := context.Background()
	v, err := b.Admit(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Put(ctx, rl.Group{Admitted: v, Version: v}))
	w, err := b.Admit(ctx)
	require.NoError(t, err)
	seen := b.Refills()
	b.Fail(w)
	woken := awaitAsync(t, ctx, b, seen)
	waitUntil(b, func() bool { return b.refill.Len() == 1 })

	// The learner at version 1: the held group (version 0, k = 0) is
	// over-stale and goes back to the dataset.
	tctx, stop := context.WithCancelCause(ctx)
	took := takeAsync(tctx, b, 1)
	<-handed
	b.mu.Lock()
	assert.False(t, b.closed, "not closed while a prompt is on its way back")
	assert.Equal(t, 1, b.handing)
	b.mu.Unlock()
	close(release)
	assert.True(t, <-woken, "the worker is told to ask the dataset again")
	assert.Equal(t, seen+1, b.Refills())
	stop(errGone)
	assert.ErrorIs(t, (<-took).err, errGone)
	assert.Equal(t, int64(1), b.Stats().Requeued)
}
