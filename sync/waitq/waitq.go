// Package waitq is a FIFO queue of blocked goroutines, the building block of
// tandem's buffer (its admission, its putters and its learner): a goroutine
// that must wait pushes a Waiter under its owner's lock, unlocks and blocks
// on the Waiter's channel (Queue.Wait); whoever changes the state grants
// waiters in order, handing each a value. Waking exactly the goroutines
// that can proceed avoids the thundering herd of a broadcast. Grants can be
// deferred (Defer, then Wakes.Wake after unlocking), so that a lock is not
// held while dozens of goroutines are made runnable.
//
// A waiter that gives up (its context ended) may find that a grant reached
// it at the same moment. Queue.Wait settles that race in one place, with
// the rule of golang.org/x/sync/semaphore's Acquire: once the context is
// seen done the caller gets an error and holds nothing, so a grant that
// raced in is reported for the owner to hand back.
//
// A Queue is not safe for concurrent use: its owner's mutex guards it. The
// zero value is an empty queue.
package waitq

import (
	"context"
	"sync"
)

// Waiter is one blocked goroutine. C receives one value when the waiter is
// granted; Val then holds the value it was granted. Waiters are recycled:
// Queue.Wait returns its waiter for reuse; an owner that blocks on C itself
// returns it with Queue.Recycle once it has received from C (or removed
// it), and must not touch it again.
type Waiter[T any] struct {
	C   chan struct{}
	Val T

	granted   bool
	unclaimed bool // granted, but its goroutine gave up before receiving
}

// Queue holds waiters in arrival order.
type Queue[T any] struct {
	list []*Waiter[T]
	head int
	free sync.Pool // recycled *Waiter[T]
}

// Push appends a waiter and returns it.
func (q *Queue[T]) Push() *Waiter[T] {
	w, _ := q.free.Get().(*Waiter[T])
	if w == nil {
		w = &Waiter[T]{C: make(chan struct{}, 1)}
	}
	if q.head > 0 && q.head == len(q.list) {
		q.list, q.head = q.list[:0], 0
	}
	q.list = append(q.list, w)
	return w
}

// Len returns the number of waiting goroutines.
func (q *Queue[T]) Len() int { return len(q.list) - q.head }

// Grant hands val to the oldest waiter and wakes it. It reports false when
// the queue is empty.
func (q *Queue[T]) Grant(val T) bool {
	w := q.grant(val)
	if w == nil {
		return false
	}
	w.C <- struct{}{} // buffered: never blocks
	return true
}

// Defer grants val to the oldest waiter like Grant, but leaves the wake-up
// to to.Wake, which the caller runs once it has released the owner's lock.
// It reports false when the queue is empty.
func (q *Queue[T]) Defer(val T, to *Wakes) bool {
	w := q.grant(val)
	if w == nil {
		return false
	}
	to.add(w.C)
	return true
}

// grant removes the oldest waiter and records val as its grant (nil when
// the queue is empty).
func (q *Queue[T]) grant(val T) *Waiter[T] {
	if q.Len() == 0 {
		return nil
	}
	w := q.list[q.head]
	q.list[q.head] = nil
	q.head++
	w.Val, w.granted = val, true
	return w
}

// Recycle returns w for reuse by a later Push. Call it once w has received
// its grant from C, or under the owner's lock once it was removed or
// granted while its goroutine gave up (the pending grant is received here;
// a deferred one is on its way, as the granter has released the lock).
// Recycle itself is safe for concurrent use.
func (q *Queue[T]) Recycle(w *Waiter[T]) {
	if w.unclaimed {
		<-w.C
	}
	var zero T
	w.Val, w.granted, w.unclaimed = zero, false, false
	q.free.Put(w)
}

// Remove takes w out of the queue, for a waiter that gives up (its context
// ended; Wait does this). It reports false when w was already granted: the
// caller then owns the grant and must undo it.
func (q *Queue[T]) Remove(w *Waiter[T]) bool {
	if w.granted {
		w.unclaimed = true // Recycle receives the grant
		return false
	}
	for i := q.head; i < len(q.list); i++ {
		if q.list[i] == w {
			copy(q.list[i:], q.list[i+1:])
			q.list[len(q.list)-1] = nil
			q.list = q.list[:len(q.list)-1]
			return true
		}
	}
	return false
}

// Wait blocks the caller, which pushed w under mu and then released mu,
// until w is granted or ctx is done, and recycles w.
//
// The race between the two is settled as golang.org/x/sync/semaphore's
// Acquire settles it: ctx wins. If w is granted and ctx is not done, Wait
// returns w's value with granted true and err nil, mu not held. If ctx is
// seen done — before the grant, at the same moment, or just after it —
// Wait locks mu, takes w out of the queue and returns context.Cause(ctx)
// with mu held; granted then reports whether a grant had reached w (val is
// its value): the caller must hand that grant back (or settle it some
// other documented way) before it unlocks mu, so that a waiter that gives
// up leaves its owner's state as if it had never waited.
func (q *Queue[T]) Wait(ctx context.Context, mu sync.Locker, w *Waiter[T]) (val T, granted bool, err error) {
	done := ctx.Done()
	select {
	case <-w.C:
		val = w.Val
		select {
		case <-done: // granted, but ctx ended as well: ctx wins
			mu.Lock()
			q.Recycle(w)
			return val, true, context.Cause(ctx)
		default:
		}
		q.Recycle(w)
		return val, true, nil
	case <-done:
		mu.Lock()
		granted = !q.Remove(w) // granted as we gave up: Recycle takes its wake-up
		val = w.Val
		q.Recycle(w)
		return val, granted, context.Cause(ctx)
	}
}

// Wakes collects the wake-ups of deferred grants. The zero value is ready;
// Wake delivers them and empties it.
type Wakes struct {
	n    int
	few  [4]chan struct{}
	more *[]chan struct{} // from wakePool, past four
}

var wakePool = sync.Pool{New: func() any { return new([]chan struct{}) }}

func (k *Wakes) add(c chan struct{}) {
	if k.n < len(k.few) {
		k.few[k.n] = c
		k.n++
		return
	}
	if k.more == nil {
		k.more = wakePool.Get().(*[]chan struct{})
	}
	*k.more = append(*k.more, c)
}

// Wake wakes every waiter granted into k, in grant order.
func (k *Wakes) Wake() {
	for i := range k.n {
		k.few[i] <- struct{}{} // buffered, one grant per waiter: never blocks
		k.few[i] = nil
	}
	k.n = 0
	if k.more != nil {
		for _, c := range *k.more {
			c <- struct{}{}
		}
		clear(*k.more)
		*k.more = (*k.more)[:0]
		wakePool.Put(k.more)
		k.more = nil
	}
}
