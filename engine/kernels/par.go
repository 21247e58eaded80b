package kernels

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/panics"
)

// Par runs kernels on up to Threads goroutines; 0 or 1 means the calling
// goroutine only. A Par is a plain value: it is safe for concurrent use, and
// the other goroutines of a call have all finished their share of it when it
// returns (they are helpers that wait a moment for the next call's share,
// then end; see parallelFor). A
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

// minStreamPerThread is the least work per goroutine for a product bound
// by streaming its weights, in elements of them (one row of activations
// against bfloat16 weights: 128 Ki multiply-adds read 256 KiB, about
// 25 µs of one core's share of the memory bandwidth).
const minStreamPerThread = 1 << 17

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

// Do calls body(item, worker) for every item in [0, items) on up to
// p.Threads goroutines, the way the kernels split their own work (see
// parallelFor): worker in [0, threads) names the goroutine, items are
// handed out dynamically, so an item's result must not depend on the
// worker that runs it, and a panic in body is raised again on the caller's
// goroutine.
func (p Par) Do(items int, body func(item, worker int)) { parallelFor(p.Threads, items, body) }

// parallelFor calls body(item, worker) for every item in [0, nItems) on
// threads goroutines (the caller's included); worker in [0, threads) names
// the goroutine, so body may keep per-worker scratch. Items are handed out
// dynamically; callers must make each item's result independent of which
// worker runs it.
//
// The other goroutines are helpers (see [helper]): ones that finished a
// share of an earlier call less than helperSpin ago and are waiting for the
// next, else new ones. The caller, done with its own items, waits for theirs
// spinning too, then blocking. Every helper has finished its share of the
// call when it returns, and ends at most helperSpin after its last share.
//
// A panic in body stops the hand-out of items and, once every goroutine has
// stopped, is raised again on the caller's goroutine. When the call uses
// more than one goroutine the value raised is the first panic's
// *panics.Recovered: its Value is body's panic value and its Stack the
// panicking goroutine's, which a re-panic would otherwise lose (printed, it
// shows both). On one goroutine body's panic simply unwinds the caller.
//
// Cost: a handful of small allocations per call, and a goroutine start per
// extra worker when no helper is waiting; a panic costs a stack capture,
// nothing is spent on it otherwise.
func parallelFor(threads, nItems int, body func(item, worker int)) {
	idle.parallelFor(threads, nItems, body)
}

func (l *helpers) parallelFor(threads, nItems int, body func(item, worker int)) {
	if threads <= 1 || nItems <= 1 {
		for i := range nItems {
			body(i, 0)
		}
		return
	}
	threads = min(threads, nItems)
	j := &job{body: body, nItems: int64(nItems), done: make(chan struct{})}
	j.pending.Store(int32(threads - 1))
	var got [8]*helper
	hs := l.take(got[:0], threads-1)
	w := 1
	for _, h := range hs {
		h.worker = w
		h.job.Store(j)
		w++
	}
	for ; w < threads; w++ {
		go (&helper{idle: l}).loop(j, w)
	}
	j.run(0)
	if !spinUntil(helperSpin, func() bool { return j.pending.Load() == 0 }) {
		<-j.done
	}
	j.catcher.Repanic()
}

// helperSpin is how long a helper, and a caller waiting for its helpers,
// spin before they end or block. Waking a parked thread costs from a few to
// about 70 microseconds (on virtual machines), as long as a 1,024 × 1,024
// bfloat16 product takes on one core, so a decode step's products, one after
// another, would otherwise each pay it. A spinning goroutine yields its
// thread every few microseconds to any other that is ready.
const helperSpin = 200 * time.Microsecond

// spinUntil polls cond, yielding to ready goroutines every 64 polls, for up
// to spin; it reports whether cond became true.
func spinUntil(spin time.Duration, cond func() bool) bool {
	var deadline time.Time
	for i := 1; ; i++ {
		if cond() {
			return true
		}
		if i%64 == 0 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(spin)
			} else if now.After(deadline) {
				return false
			}
			runtime.Gosched()
		}
	}
}

// job is one parallelFor call's shared state.
type job struct {
	body    func(item, worker int)
	nItems  int64
	next    atomic.Int64  // the next item to hand out
	pending atomic.Int32  // helpers not yet done with their share
	done    chan struct{} // closed when pending reaches zero
	catcher panics.Catcher
}

// run does items until none are left (or one has panicked).
func (j *job) run(worker int) {
	j.catcher.Try(func() {
		for {
			i := j.next.Add(1) - 1
			if i >= j.nItems {
				return
			}
			j.body(int(i), worker)
		}
	})
	if j.catcher.Recovered() != nil {
		j.next.Store(j.nItems) // stop handing out work
	}
}

// helper is a goroutine that runs shares of parallelFor calls. Started by a
// call, it then waits up to helperSpin for another call's share, in the idle
// list, and ends when none comes.
type helper struct {
	idle   *helpers
	job    atomic.Pointer[job]
	worker int // the share's worker index, written before job
}

// idle holds the helpers waiting for a share of parallelFor's calls.
var idle = helpers{spin: helperSpin}

// helpers is a set of helpers waiting for a share, the most recent last;
// each waits spin.
type helpers struct {
	spin time.Duration
	mu   sync.Mutex
	hs   []*helper
}

// take removes up to n waiting helpers, appending them to dst; each must then
// be given a job.
func (l *helpers) take(dst []*helper, n int) []*helper {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := min(n, len(l.hs))
	dst = append(dst, l.hs[len(l.hs)-k:]...)
	clear(l.hs[len(l.hs)-k:])
	l.hs = l.hs[:len(l.hs)-k]
	return dst
}

// add puts h in the set and returns how long it is to wait.
func (l *helpers) add(h *helper) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hs = append(l.hs, h)
	return l.spin
}

// leave removes h unless a call has taken it, reporting whether it did.
func (l *helpers) leave(h *helper) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := slices.Index(l.hs, h)
	if k < 0 {
		return false
	}
	l.hs = slices.Delete(l.hs, k, k+1)
	return true
}

func (h *helper) loop(j *job, worker int) {
	for {
		j.run(worker)
		if j.pending.Add(-1) == 0 {
			close(j.done)
		}
		spin := h.idle.add(h)
		if !spinUntil(spin, func() bool { return h.job.Load() != nil }) && h.idle.leave(h) {
			return
		}
		// Taken by a call: its job is stored right after, if not yet.
		for h.job.Load() == nil {
			runtime.Gosched()
		}
		j, worker = h.job.Swap(nil), h.worker
	}
}

// DefaultThreads is the number of goroutines a Par should use to fill the
// machine: GOMAXPROCS.
func DefaultThreads() int { return runtime.GOMAXPROCS(0) }
