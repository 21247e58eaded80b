// Package waitq is a FIFO queue of blocked goroutines, the building block of
// tandem's admission gate and buffer: a goroutine that must wait pushes a
// Waiter under its owner's lock, unlocks and blocks on the Waiter's channel;
// whoever changes the state grants waiters in order, handing each a value.
// Waking exactly the goroutines that can proceed avoids the thundering herd
// of a broadcast.
//
// A Queue is not safe for concurrent use: its owner's mutex guards it. The
// zero value is an empty queue.
package waitq

import "sync"

// Waiter is one blocked goroutine. C receives one value when the waiter is
// granted; Val then holds the value it was granted. Waiters are recycled:
// after it has received from C (or was removed), the owner returns it
// with Queue.Recycle and must not touch it again.
type Waiter[T any] struct {
	C   chan struct{}
	Val T

	granted bool
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
	if q.Len() == 0 {
		return false
	}
	w := q.list[q.head]
	q.list[q.head] = nil
	q.head++
	w.Val, w.granted = val, true
	w.C <- struct{}{} // buffered: never blocks
	return true
}

// Recycle returns w for reuse by a later Push. Call it once w has received
// its grant from C, or under the owner's lock once it was removed or
// granted while its goroutine gave up (the pending grant is drained here).
// Recycle itself is safe for concurrent use.
func (q *Queue[T]) Recycle(w *Waiter[T]) {
	if w.granted {
		select {
		case <-w.C:
		default:
		}
	}
	var zero T
	w.Val, w.granted = zero, false
	q.free.Put(w)
}

// Remove takes w out of the queue, for a waiter that gives up (its context
// ended). It reports false when w was already granted: the caller then owns
// the grant and must undo it.
func (q *Queue[T]) Remove(w *Waiter[T]) bool {
	if w.granted {
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
