package local

import (
	"sync"
)

// queue runs submitted jobs one at a time, in submission order, on one
// goroutine it owns. Submission never blocks: the queue is unbounded, which
// is safe because callers wait on their futures long before it grows (the
// learner submits a handful of calls per step).
type queue struct {
	mu     sync.Mutex
	jobs   []func()
	wake   chan struct{} // size 1: a pending wake-up
	closed bool
	done   chan struct{}
}

func newQueue() *queue {
	q := &queue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// submit queues job; it reports false after close.
func (q *queue) submit(job func()) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.jobs = append(q.jobs, job)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

func (q *queue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		if len(q.jobs) == 0 {
			closed := q.closed
			q.mu.Unlock()
			if closed {
				return
			}
			<-q.wake
			continue
		}
		job := q.jobs[0]
		q.jobs[0] = nil
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		job()
	}
}

// close stops accepting jobs, lets the queued ones finish and waits for the
// goroutine to end.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}
