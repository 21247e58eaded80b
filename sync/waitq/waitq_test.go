package waitq

import (
	"testing"
	"time"

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
	go func() {
		time.Sleep(2 * time.Millisecond)
		wk.Wake()
	}()
	q.Recycle(w)
	w2 := q.Push()
	select {
	case <-w2.C:
		t.Fatal("recycled waiter woke without a grant")
	default:
	}
}
