package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// ErrClosed is returned by Sample calls on a closed [Sampler], and by the
// calls still running when it closed.
var ErrClosed = errors.New("engine: sampler closed")

// errAbandoned marks a call whose caller stopped waiting; nobody reads it.
var errAbandoned = errors.New("engine: sample abandoned")

// SamplerStats are a sampler's scheduler figures: the current state and
// counters since the sampler was made.
type SamplerStats struct {
	Waiting    int // calls queued, not admitted yet
	Prefilling int // admitted calls whose prompt is not fully cached
	Running    int // sequences decoding
	Versions   int // distinct adapters the admitted calls use
	// KV cache memory, in bytes: the budget, what admitted calls reserve
	// (their worst case) and what their caches hold now.
	KVBudgetBytes    int64
	KVReservedBytes  int64
	KVAllocatedBytes int64
	Steps            uint64 // batched forwards run
	DecodeRows       uint64 // decode rows in them
	PrefillRows      uint64 // prompt rows in them
	SharedRows       uint64 // prompt rows copied from another call's cache instead
	Tokens           uint64 // tokens sampled
	Completed        uint64 // calls answered
	Abandoned        uint64 // calls dropped because their caller stopped waiting
}

// loop is the goroutine driver around sched: it runs while calls are in
// flight and exits when the scheduler is idle, so an idle sampler holds no
// goroutine. Close stops it and waits for it.
type loop[T Float] struct {
	mu       sync.Mutex
	incoming []*call[T]
	running  bool
	closed   bool
	stats    SamplerStats
	wg       sync.WaitGroup
	core     *sched[T] // touched only by the loop goroutine
	// submitted, when set (tests), receives a value after each submit;
	// closing, when set (tests), is closed once close has marked the
	// sampler closed.
	submitted, closing chan struct{}
}

// submit hands c to the scheduler, starting the loop goroutine when none
// runs.
func (lp *loop[T]) submit(c *call[T]) error {
	lp.mu.Lock()
	if lp.closed {
		lp.mu.Unlock()
		return ErrClosed
	}
	lp.incoming = append(lp.incoming, c)
	lp.stats.Waiting++
	if !lp.running {
		lp.running = true
		lp.wg.Add(1)
		go lp.run()
	}
	lp.mu.Unlock()
	if lp.submitted != nil {
		lp.submitted <- struct{}{}
	}
	return nil
}

// wait blocks until c is answered or ctx (whose Done channel c.stop is)
// ends; the scheduler then drops c before its next step.
func (lp *loop[T]) wait(ctx context.Context, c *call[T]) ([]Sequence, []float64, error) {
	select {
	case <-c.done:
		if c.err != nil {
			return nil, nil, fmt.Errorf("engine: sample: %w", c.err)
		}
		return c.seqs, c.promptLP, nil
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("engine: sample: %w", context.Cause(ctx))
	}
}

// run is the loop goroutine: take new calls, sweep, admit, step, until
// there is nothing left or the sampler closes. A panic in a step fails
// every call in flight with an error carrying the stack.
func (lp *loop[T]) run() {
	defer lp.wg.Done()
	core := lp.core
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("engine: sampler step panicked: %v\n%s", r, debug.Stack())
			lp.mu.Lock()
			core.calls = append(core.calls, lp.incoming...)
			lp.incoming = nil
			core.failAll(err)
			lp.stats, lp.running = core.snapshot(), false
			lp.mu.Unlock()
		}
	}()
	for {
		lp.mu.Lock()
		core.calls = append(core.calls, lp.incoming...)
		lp.incoming = nil
		if lp.closed {
			core.failAll(ErrClosed)
		}
		core.sweep()
		if core.idle() {
			lp.stats, lp.running = core.snapshot(), false
			lp.mu.Unlock()
			return
		}
		lp.stats = core.snapshot()
		lp.mu.Unlock()
		core.admit(false)
		if !core.step() {
			// Nothing fit: admit the oldest waiting item over the budget.
			core.admit(true)
			core.step()
		}
	}
}

// close makes later submits fail, fails the calls in flight and waits for
// the loop goroutine.
func (lp *loop[T]) close() {
	lp.mu.Lock()
	lp.closed = true
	lp.mu.Unlock()
	if lp.closing != nil {
		close(lp.closing)
	}
	lp.wg.Wait()
}

func (lp *loop[T]) snapshot() SamplerStats {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.stats
}
