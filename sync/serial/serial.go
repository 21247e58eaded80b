// Package serial runs calls one at a time, in the order they were
// submitted, and hands each call's result back as an rl.Future. It is the
// queue behind every rl.Trainer in backend/ (local, sim, tinker, resilient),
// whose contract is: a method queues its call and returns at once, and
// calls are applied in submission order, one at a time.
//
// A Queue owns at most one goroutine. It starts when a call arrives at an
// idle queue and ends once the queue is empty again, so an idle Queue costs
// nothing and one that is dropped without Close leaks nothing; Close waits
// for it.
package serial

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc/panics"

	"github.com/tandemrl/tandem/rl"
)

// ErrClosed is the error of a call submitted after Close.
var ErrClosed = errors.New("serial: queue closed")

// Queue runs submitted calls one at a time in submission order. The zero
// value is an empty, open queue. A Queue is safe for concurrent use; calls
// from different goroutines are ordered by when Submit took them. It must
// not be copied after first use.
//
// The queue is unbounded, so that Submit never blocks (rl.Trainer promises
// that a call returns at once). Its length is bounded by its callers: each
// waits on its futures, and a learner keeps one step's calls in flight.
type Queue struct {
	mu      sync.Mutex
	calls   []func() // calls[head:] wait, oldest first
	head    int
	running bool // a drain goroutine exists
	closed  bool
	wg      sync.WaitGroup

	pending atomic.Int64 // submitted and not yet finished
}

// compactAt is how many finished slots calls may hold at its front before
// the waiting ones are moved down, so that a queue that never empties does
// not grow without bound.
const compactAt = 64

// Submit queues fn on q and returns its Future at once. When fn's turn
// comes, it runs on q's goroutine with ctx, unless ctx is already done:
// then it is skipped and its Future holds context.Cause(ctx). The Future
// resolves with fn's result; with ErrClosed if q was closed before Submit;
// or, if fn panics, with an error that wraps a *panics.ErrRecovered
// carrying the panic's value and stack (and unwraps to the value when it
// is an error), and the queue goes on with the next call.
//
// fn may submit further calls to q (they queue behind everything already
// submitted) but must not wait for them, nor call q.Close: either would
// wait for itself.
func Submit[T any](q *Queue, ctx context.Context, fn func(ctx context.Context) (T, error)) *rl.Future[T] {
	f := rl.NewFuture[T]()
	if !q.push(func() { f.Resolve(call(ctx, fn)) }) {
		var zero T
		f.Resolve(zero, ErrClosed)
	}
	return f
}

// call runs fn unless ctx is done, turning a panic into an error.
func call[T any](ctx context.Context, fn func(ctx context.Context) (T, error)) (val T, err error) {
	if ctx.Err() != nil {
		return val, context.Cause(ctx)
	}
	if r := panics.Try(func() { val, err = fn(ctx) }); r != nil {
		var zero T
		return zero, fmt.Errorf("serial: queued call panicked: %w", r.AsError())
	}
	return val, err
}

// push queues c, starting the drain goroutine if none runs; it reports
// false after Close.
func (q *Queue) push(c func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.calls = append(q.calls, c)
	q.pending.Add(1)
	if !q.running {
		q.running = true
		q.wg.Go(q.drain)
	}
	return true
}

// drain runs the queued calls until none is left.
func (q *Queue) drain() {
	for {
		q.mu.Lock()
		if q.head == len(q.calls) {
			q.calls, q.head = q.calls[:0], 0
			q.running = false
			q.mu.Unlock()
			return
		}
		c := q.calls[q.head]
		q.calls[q.head] = nil
		q.head++
		if q.head >= compactAt && 2*q.head >= len(q.calls) {
			n := copy(q.calls, q.calls[q.head:])
			clear(q.calls[n:])
			q.calls, q.head = q.calls[:n], 0
		}
		q.mu.Unlock()
		c() // never panics: call recovers fn's panic
		q.pending.Add(-1)
	}
}

// Idle reports whether every call submitted so far has finished (its
// Future resolved). With other goroutines submitting it is only a
// snapshot; a caller that orders its own submissions under its own lock
// can rely on it there: true means every call it queued has finished, so a
// result it hands back at once is in order behind them.
func (q *Queue) Idle() bool { return q.pending.Load() == 0 }

// Close stops q taking calls: a later Submit resolves with ErrClosed. The
// calls already queued still run, in order (those whose ctx has ended are
// skipped, so cancelling their contexts hurries Close). Close returns once
// they have finished and q's goroutine has ended. It is idempotent and safe
// for concurrent use; called from a queued call it deadlocks.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wg.Wait()
}
