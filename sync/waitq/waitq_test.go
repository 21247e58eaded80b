package waitq

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFIFO(t *testing.T) {
	t.Parallel()
	var q Queue[int]
	assert.False(t, q.Grant(1))
	ws := []*Waiter[int]{q.Push(), q.Push(), q.Push()}
	require.Equal(t, 3, q.Len())
	require.True(t, q.Remove(ws[1]))
	require.True(t, q.Grant(10))
	require.True(t, q.Grant(20))
	assert.False(t, q.Grant(30))
	for i, w := range []*Waiter[int]{ws[0], ws[2]} {
		select {
		case <-w.C:
		default:
			t.Fatalf("waiter %d not woken", i)
		}
	}
	assert.Equal(t, 10, ws[0].Val)
	assert.Equal(t, 20, ws[2].Val)
	assert.False(t, q.Remove(ws[0]), "a granted waiter cannot be removed")
	select {
	case <-ws[1].C:
		t.Fatal("removed waiter was woken")
	default:
	}
	// Reuse after draining.
	w := q.Push()
	require.True(t, q.Grant(7))
	assert.Equal(t, 7, w.Val)
	assert.Equal(t, 0, q.Len())
}

func TestRecycle(t *testing.T) {
	t.Parallel()
	var q Queue[int]
	w := q.Push()
	require.True(t, q.Grant(5))
	<-w.C
	assert.Equal(t, 5, w.Val)
	q.Recycle(w)

	// A waiter granted while its goroutine gave up: Recycle drains the
	// pending grant so the reused waiter does not wake early.
	w2 := q.Push()
	require.True(t, q.Grant(6))
	assert.False(t, q.Remove(w2))
	q.Recycle(w2)
	for range 4 {
		w3 := q.Push()
		select {
		case <-w3.C:
			t.Fatal("recycled waiter woke without a grant")
		default:
		}
		assert.Zero(t, w3.Val)
		require.True(t, q.Remove(w3))
		q.Recycle(w3)
	}
}

func TestDeferWakesAfterUnlock(t *testing.T) {
	t.Parallel()
	var q Queue[int]
	ws := make([]*Waiter[int], 7) // more than Wakes holds inline
	for i := range ws {
		ws[i] = q.Push()
	}
	var wk Wakes
	for i := range ws {
		require.True(t, q.Defer(i*10, &wk))
	}
	assert.False(t, q.Defer(1, &wk), "queue empty")
	for i, w := range ws {
		select {
		case <-w.C:
			t.Fatalf("waiter %d woken before Wake", i)
		default:
		}
		assert.Equal(t, i*10, w.Val, "the value is set at the grant")
	}
	wk.Wake()
	for i, w := range ws {
		select {
		case <-w.C:
		default:
			t.Fatalf("waiter %d not woken", i)
		}
		q.Recycle(w)
	}
	wk.Wake() // emptied: a second Wake does nothing

	// A waiter that gives up after a deferred grant, before the wake-up:
	// Recycle waits for the wake-up, so the reused waiter starts clean.
	w := q.Push()
	require.True(t, q.Defer(5, &wk))
	assert.False(t, q.Remove(w))
	recycled := make(chan struct{})
	go func() {
		q.Recycle(w)
		close(recycled)
	}()
	select {
	case <-recycled:
		t.Fatal("Recycle returned before the grant's wake-up")
	default:
	}
	wk.Wake()
	<-recycled
	requireClean(t, &q)
}

// requireClean checks that a waiter pushed now starts clean: no value, no
// wake-up pending.
func requireClean(t *testing.T, q *Queue[int]) {
	t.Helper()
	w := q.Push()
	select {
	case <-w.C:
		t.Fatal("recycled waiter woke without a grant")
	default:
	}
	assert.Zero(t, w.Val)
	require.True(t, q.Remove(w))
	q.Recycle(w)
}

func TestWaitGranted(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var q Queue[int]
	w := q.Push()
	require.True(t, q.Grant(4))
	v, granted, err := q.Wait(context.Background(), &mu, w)
	require.NoError(t, err)
	assert.True(t, granted)
	assert.Equal(t, 4, v)
	require.True(t, mu.TryLock(), "mu is not held after a grant")
	requireClean(t, &q)
}

func TestWaitCancelled(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var q Queue[int]
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("shutting down")
	cancel(cause)
	w := q.Push()
	_, granted, err := q.Wait(ctx, &mu, w)
	require.ErrorIs(t, err, cause)
	assert.False(t, granted)
	assert.False(t, mu.TryLock(), "mu is held for the caller on error")
	assert.Equal(t, 0, q.Len(), "the waiter left the queue")
	assert.False(t, q.Grant(1), "nobody left to grant")
	requireClean(t, &q)
}

// TestWaitGrantAndCancelBothReady: the grant and the end of ctx have both
// happened before the waiter looks. Whichever Wait's select sees first, ctx
// wins and the grant is reported for the caller to hand back. The loop
// makes sure both orders of the select are met.
func TestWaitGrantAndCancelBothReady(t *testing.T) {
	t.Parallel()
	var q Queue[int]
	for i := range 64 {
		var mu sync.Mutex
		ctx, cancel := context.WithCancel(context.Background())
		w := q.Push()
		mu.Lock()
		if i%2 == 0 {
			require.True(t, q.Grant(i))
		} else {
			var wk Wakes
			require.True(t, q.Defer(i, &wk))
			wk.Wake()
		}
		mu.Unlock()
		cancel()
		v, granted, err := q.Wait(ctx, &mu, w)
		require.ErrorIs(t, err, context.Canceled)
		assert.True(t, granted, "the raced grant is reported")
		assert.Equal(t, i, v)
		assert.False(t, mu.TryLock(), "mu is held for the caller to hand the grant back")
		requireClean(t, &q)
	}
}

// hookLocker tells the test when a goroutine is about to lock it.
type hookLocker struct {
	sync.Mutex
	locking chan struct{}
}

func (l *hookLocker) Lock() {
	l.locking <- struct{}{}
	l.Mutex.Lock()
}

// TestWaitGrantRacesCancel forces the narrow order: the waiter has seen ctx
// done and is about to lock, and a deferred grant is made before it holds
// the lock (its wake-up after). Wait reports the grant for the caller to
// hand back and leaves the waiter clean for reuse.
func TestWaitGrantRacesCancel(t *testing.T) {
	t.Parallel()
	mu := &hookLocker{locking: make(chan struct{})}
	var q Queue[int]
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("shutting down")
	w := q.Push()
	mu.Mutex.Lock() // the granter holds the owner's lock
	cancel(cause)
	type result struct {
		v       int
		granted bool
		err     error
	}
	out := make(chan result, 1)
	go func() {
		v, granted, err := q.Wait(ctx, mu, w)
		out <- result{v, granted, err}
	}()
	<-mu.locking // not granted yet: the waiter can only have seen ctx done
	var wk Wakes
	require.True(t, q.Defer(9, &wk), "the waiter is still queued")
	mu.Mutex.Unlock()
	wk.Wake()
	r := <-out
	require.ErrorIs(t, r.err, cause)
	assert.True(t, r.granted)
	assert.Equal(t, 9, r.v)
	assert.False(t, mu.TryLock(), "mu is held for the caller")
	requireClean(t, &q)
}
