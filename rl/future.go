package rl

import (
	"context"
	"sync"
)

// Future is the result of a call submitted to a Trainer: the call is queued
// (its place in the order fixed) when the method returns, and its result is
// read later with Wait. This is how a forward-backward and an optimizer step
// are pipelined: submit both, then wait on both. A Future is safe for
// concurrent use; Wait may be called any number of times.
type Future[T any] struct {
	done chan struct{}
	once sync.Once
	val  T
	err  error
}

// NewFuture returns an unresolved future; its producer must call Resolve
// exactly once (later calls are ignored).
func NewFuture[T any]() *Future[T] { return &Future[T]{done: make(chan struct{})} }

// Resolved returns a future already holding val and err.
func Resolved[T any](val T, err error) *Future[T] {
	f := NewFuture[T]()
	f.Resolve(val, err)
	return f
}

// Failed returns a future already holding err.
func Failed[T any](err error) *Future[T] {
	var zero T
	return Resolved(zero, err)
}

// Resolve sets the result and wakes every waiter. Only the first call has an
// effect.
func (f *Future[T]) Resolve(val T, err error) {
	f.once.Do(func() {
		f.val, f.err = val, err
		close(f.done)
	})
}

// Done is closed when the result is available.
func (f *Future[T]) Done() <-chan struct{} { return f.done }

// Wait blocks until the result is available or ctx ends. Cancelling ctx
// stops the wait, not the call: the call still happens in order.
func (f *Future[T]) Wait(ctx context.Context) (T, error) {
	select {
	case <-f.done:
		return f.val, f.err
	default:
	}
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}
