package serial

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sourcegraph/conc/panics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// blocker is a call that holds the queue until the test releases it, and
// says when it has started.
type blocker struct {
	started, release chan struct{}
}

func newBlocker() blocker {
	return blocker{started: make(chan struct{}), release: make(chan struct{})}
}

func (b blocker) call(context.Context) (string, error) {
	close(b.started)
	<-b.release
	return "blocker", nil
}

func resolved[T any](f *rl.Future[T]) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

// TestOrderAndOneAtATime: calls submitted while the queue is held run
// afterwards in submission order, never two at once; Submit returned for
// every one of them while the first was still running.
func TestOrderAndOneAtATime(t *testing.T) {
	t.Parallel()
	var q Queue
	defer q.Close()
	ctx := context.Background()
	b := newBlocker()
	first := Submit(&q, ctx, b.call)
	<-b.started

	const n = 100
	var (
		running, most atomic.Int32
		order         []int // written only by queued calls, one at a time
	)
	futs := make([]*rl.Future[int], n)
	for i := range futs {
		futs[i] = Submit(&q, ctx, func(context.Context) (int, error) {
			r := running.Add(1)
			defer running.Add(-1)
			if r > most.Load() {
				most.Store(r)
			}
			order = append(order, i)
			return i * i, nil
		})
	}
	assert.False(t, resolved(first), "the first call is still held")
	for _, f := range futs {
		assert.False(t, resolved(f), "nothing runs before the call ahead of it")
	}
	close(b.release)
	for i, f := range futs {
		v, err := f.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, i*i, v)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, order)
	assert.Equal(t, int32(1), most.Load(), "one call at a time")
	v, err := first.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "blocker", v)
}

// TestConcurrentSubmitters: calls from many goroutines never overlap, and
// each goroutine's calls run in the order it submitted them.
func TestConcurrentSubmitters(t *testing.T) {
	t.Parallel()
	var q Queue
	defer q.Close()
	ctx := context.Background()
	const goroutines, each = 8, 200
	var (
		running atomic.Int32
		overlap atomic.Bool
		seen    = make([][]int, goroutines) // seen[g] written only by queued calls
		wg      sync.WaitGroup
	)
	futs := make([][]*rl.Future[struct{}], goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				futs[g] = append(futs[g], Submit(&q, ctx, func(context.Context) (struct{}, error) {
					if running.Add(1) > 1 {
						overlap.Store(true)
					}
					seen[g] = append(seen[g], i)
					running.Add(-1)
					return struct{}{}, nil
				}))
			}
		})
	}
	wg.Wait()
	for _, fs := range futs {
		for _, f := range fs {
			_, err := f.Wait(ctx)
			require.NoError(t, err)
		}
	}
	assert.False(t, overlap.Load())
	for g := range goroutines {
		require.Len(t, seen[g], each)
		for i, v := range seen[g] {
			require.Equal(t, i, v, "goroutine %d's calls in its order", g)
		}
	}
}

// TestContextDoneBeforeItsTurn: a call whose ctx ends while it waits is
// skipped with the context's cause; the calls around it run.
func TestContextDoneBeforeItsTurn(t *testing.T) {
	t.Parallel()
	var q Queue
	defer q.Close()
	bg := context.Background()
	b := newBlocker()
	Submit(&q, bg, b.call)
	<-b.started

	cause := errors.New("caller gave up")
	ctx, cancel := context.WithCancelCause(bg)
	ran := false
	skipped := Submit(&q, ctx, func(context.Context) (int, error) { ran = true; return 1, nil })
	after := Submit(&q, bg, func(context.Context) (int, error) { return 2, nil })
	cancel(cause)
	close(b.release)

	_, err := skipped.Wait(bg)
	require.ErrorIs(t, err, cause)
	v, err := after.Wait(bg)
	require.NoError(t, err)
	assert.Equal(t, 2, v)
	assert.False(t, ran, "a call whose ctx ended before its turn does not run")
}

type ctxKey struct{}

// TestCallGetsItsContext: a call runs with the ctx it was submitted with,
// so it sees its values and its cancellation.
func TestCallGetsItsContext(t *testing.T) {
	t.Parallel()
	var q Queue
	defer q.Close()
	bg := context.Background()
	ctx, cancel := context.WithCancelCause(context.WithValue(bg, ctxKey{}, "mine"))
	cause := errors.New("stop now")
	f := Submit(&q, ctx, func(ctx context.Context) (string, error) {
		v, _ := ctx.Value(ctxKey{}).(string)
		cancel(cause) // cancelled while it runs: the call sees it
		<-ctx.Done()
		return v, context.Cause(ctx)
	})
	v, err := f.Wait(bg)
	assert.Equal(t, "mine", v)
	assert.ErrorIs(t, err, cause)
}

// TestCloseLetsQueuedCallsFinish: Close returns only once the calls queued
// before it have run; later submissions fail with ErrClosed and do not run.
func TestCloseLetsQueuedCallsFinish(t *testing.T) {
	t.Parallel()
	var q Queue
	bg := context.Background()
	b := newBlocker()
	first := Submit(&q, bg, b.call)
	<-b.started
	queued := Submit(&q, bg, func(context.Context) (int, error) { return 7, nil })

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		q.Close()
	}()
	close(b.release)
	<-closed
	assert.True(t, resolved(first))
	require.True(t, resolved(queued), "Close waited for the queued call")
	v, err := queued.Wait(bg)
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	assert.True(t, q.Idle())

	ran := false
	late := Submit(&q, bg, func(context.Context) (int, error) { ran = true; return 1, nil })
	require.True(t, resolved(late), "a call after Close fails at once")
	_, err = late.Wait(bg)
	require.ErrorIs(t, err, ErrClosed)
	assert.False(t, ran)
	q.Close() // idempotent
}

// TestCloseOfIdleQueue: closing a queue that never ran anything returns at
// once, and the zero value refuses calls after it.
func TestCloseOfIdleQueue(t *testing.T) {
	t.Parallel()
	var q Queue
	q.Close()
	_, err := Submit(&q, context.Background(), func(context.Context) (int, error) { return 1, nil }).Wait(context.Background())
	require.ErrorIs(t, err, ErrClosed)
}

var errInPanic = errors.New("a panic with an error value")

func panicker() (int, error) { panic("boom") }

// TestPanicBecomesAnError: a panicking call resolves its Future with an
// error carrying the value and the stack; the queue goes on.
func TestPanicBecomesAnError(t *testing.T) {
	t.Parallel()
	var q Queue
	defer q.Close()
	ctx := context.Background()
	p := Submit(&q, ctx, func(context.Context) (int, error) { return panicker() })
	pe := Submit(&q, ctx, func(context.Context) (int, error) { panic(fmt.Errorf("wrapped: %w", errInPanic)) })
	next := Submit(&q, ctx, func(context.Context) (int, error) { return 3, nil })

	_, err := p.Wait(ctx)
	var rec *panics.ErrRecovered
	require.ErrorAs(t, err, &rec)
	assert.Equal(t, "boom", rec.Value)
	assert.Contains(t, string(rec.Stack), "serial.panicker", "the stack shows where it panicked")
	assert.True(t, strings.HasPrefix(err.Error(), "serial: queued call panicked: panic: boom"), err.Error())

	_, err = pe.Wait(ctx)
	assert.ErrorIs(t, err, errInPanic, "a panic with an error unwraps to it")

	v, err := next.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, v)
}

// TestIdle: idle before anything is submitted, busy while a call waits or
// runs, idle once Close has seen the queue drain.
func TestIdle(t *testing.T) {
	t.Parallel()
	var q Queue
	ctx := context.Background()
	assert.True(t, q.Idle())
	b := newBlocker()
	f := Submit(&q, ctx, b.call)
	<-b.started
	assert.False(t, q.Idle(), "running")
	g := Submit(&q, ctx, func(context.Context) (bool, error) { return q.Idle(), nil })
	assert.False(t, q.Idle(), "waiting")
	close(b.release)
	busy, err := g.Wait(ctx)
	require.NoError(t, err)
	assert.False(t, busy, "a running call counts")
	q.Close()
	assert.True(t, resolved(f))
	assert.True(t, q.Idle())
}

// TestSubmitFromACall: a call may queue another; it runs after everything
// submitted before it.
func TestSubmitFromACall(t *testing.T) {
	t.Parallel()
	var q Queue
	defer q.Close()
	ctx := context.Background()
	var order []string
	var inner *rl.Future[struct{}]
	outer := Submit(&q, ctx, func(context.Context) (struct{}, error) {
		order = append(order, "outer")
		inner = Submit(&q, ctx, func(context.Context) (struct{}, error) { order = append(order, "inner"); return struct{}{}, nil })
		return struct{}{}, nil
	})
	_, err := outer.Wait(ctx)
	require.NoError(t, err)
	_, err = inner.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"outer", "inner"}, order)
}

// TestLongQueueCompacts: a queue that never empties keeps its backing
// array bounded by the calls waiting, not by the calls ever submitted.
func TestLongQueueCompacts(t *testing.T) {
	t.Parallel()
	var q Queue
	defer q.Close()
	ctx := context.Background()
	const total, waiting = 20 * compactAt, 3
	var (
		submitted = waiting
		ran       int
		biggest   int // these three written only by queued calls
		finished  = make(chan struct{})
		step      func(context.Context) (struct{}, error)
	)
	// Each call queues the next one, so about waiting calls wait at any
	// time while total pass through.
	step = func(context.Context) (struct{}, error) {
		q.mu.Lock()
		biggest = max(biggest, cap(q.calls))
		q.mu.Unlock()
		if submitted < total {
			submitted++
			Submit(&q, ctx, step)
		}
		if ran++; ran == total {
			close(finished)
		}
		return struct{}{}, nil
	}
	b := newBlocker()
	Submit(&q, ctx, b.call)
	<-b.started
	for range waiting {
		Submit(&q, ctx, step)
	}
	close(b.release)
	<-finished
	assert.LessOrEqual(t, biggest, 4*compactAt, "backing array bounded while %d calls went through", total)
}
