package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc/panics"
)

// Par runs kernels on up to Threads goroutines; 0 or 1 means the calling
// goroutine only. A Par is a plain value: it is safe for concurrent use, and
// the goroutines a call starts have all finished when the call returns. A
// panic on one of them (a bug: bad arguments panic on the caller's goroutine
// before any starts) is raised again on the caller's goroutine as a
// *panics.Recovered (github.com/sourcegraph/conc/panics) that keeps the
// panicking goroutine's stack.
//
// Threads changes only the speed of a call, never its result: work is split
// over output tiles, and the arithmetic that produces each output element is
// fixed by the call's shape alone.
type Par struct{ Threads int }

// minWorkPerThread is the least work (multiply-adds) that earns a goroutine
// by default. Waking an idle thread for a new goroutine and joining it costs
// from one to tens of microseconds; 1<<20 multiply-adds take about 16 µs at
// the AVX-512 kernel's speed and 30 µs at AVX2's.
const minWorkPerThread = 1 << 20

// workers returns how many goroutines to use for nItems items worth work
// multiply-adds in total, giving each at least minWork.
func (p Par) workers(nItems int, work, minWork int64) int {
	t := p.Threads
	if t <= 1 || nItems <= 1 {
		return 1
	}
	t = min(t, nItems)
	if byWork := work / max(minWork, 1); byWork < int64(t) {
		t = int(max(byWork, 1))
	}
	return t
}

// parallelFor calls body(item, worker) for every item in [0, nItems) on
// threads goroutines (the caller's included); worker in [0, threads) names
// the goroutine, so body may keep per-worker scratch. Items are handed out
// dynamically; callers must make each item's result independent of which
// worker runs it.
//
// A panic in body stops the hand-out of items and, once every goroutine has
// stopped, is raised again on the caller's goroutine. When the call uses
// more than one goroutine the value raised is the first panic's
// *panics.Recovered: its Value is body's panic value and its Stack the
// panicking goroutine's, which a re-panic would otherwise lose (printed, it
// shows both). On one goroutine body's panic simply unwinds the caller.
//
// Cost: one goroutine start and join per extra worker and a handful of small
// allocations per call; a panic costs a stack capture, nothing is spent on
// it otherwise.
func parallelFor(threads, nItems int, body func(item, worker int)) {
	if threads <= 1 || nItems <= 1 {
		for i := range nItems {
			body(i, 0)
		}
		return
	}
	threads = min(threads, nItems)
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		catcher panics.Catcher
	)
	run := func(worker int) {
		catcher.Try(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= nItems {
					return
				}
				body(i, worker)
			}
		})
		if catcher.Recovered() != nil {
			next.Store(int64(nItems)) // stop handing out work
		}
	}
	wg.Add(threads - 1)
	for w := 1; w < threads; w++ {
		go func() {
			defer wg.Done()
			run(w)
		}()
	}
	run(0)
	wg.Wait()
	catcher.Repanic()
}

// DefaultThreads is the number of goroutines a Par should use to fill the
// machine: GOMAXPROCS.
func DefaultThreads() int { return runtime.GOMAXPROCS(0) }
