package kernels

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/conc/panics"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParWorkers(t *testing.T) {
	t.Parallel()
	const minWork = 1000
	big := int64(minWork) * 100
	cases := []struct {
		name    string
		threads int
		items   int
		work    int64
		want    int
	}{
		{"zero threads means the caller", 0, 100, big, 1},
		{"one thread", 1, 100, big, 1},
		{"one item", 8, 1, big, 1},
		{"bounded by items", 8, 3, big, 3},
		{"bounded by threads", 4, 100, big, 4},
		{"too little work", 8, 100, minWork - 1, 1},
		{"work for two", 8, 100, 2*minWork + 1, 2},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Par{Threads: tc.threads}.workers(tc.items, tc.work, minWork), tc.name)
	}
}

func TestParallelForRunsEveryItemOnce(t *testing.T) {
	t.Parallel()
	for _, threads := range []int{1, 2, 3, 8} {
		counts := make([]atomic.Int32, 50)
		var maxWorker atomic.Int32
		parallelFor(threads, len(counts), func(item, worker int) {
			counts[item].Add(1)
			if w := int32(worker); w > maxWorker.Load() {
				maxWorker.Store(w)
			}
		})
		for i := range counts {
			require.Equal(t, int32(1), counts[i].Load(), "threads=%d item %d", threads, i)
		}
		assert.Less(t, int(maxWorker.Load()), threads, "worker index within [0, threads)")
	}
}

// TestParallelForPanics checks that a panic in body reaches the caller after
// every goroutine has stopped (TestMain checks for leaks), carrying body's
// panic value.
func TestParallelForPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		rec, ok := recover().(*panics.Recovered)
		require.True(t, ok, "a panic on several goroutines is raised again as a *panics.Recovered")
		assert.Equal(t, "boom", rec.Value)
	}()
	parallelFor(4, 100, func(item, _ int) {
		if item == 37 {
			panic("boom")
		}
	})
	t.Fatal("parallelFor returned after a panic in body")
}

// panicInWorker is the frame TestParallelForKeepsWorkerStack looks for.
//
//go:noinline
func panicInWorker(released chan<- struct{}) {
	close(released)
	panic("worker failed")
}

// TestParallelForKeepsWorkerStack checks that a panic on a worker goroutine
// (not the caller's) is raised again on the caller with the worker's stack:
// the panicking function's frame is in the recovered value's text. The
// caller's body waits for the worker's panic, so the worker necessarily
// takes the second item.
func TestParallelForKeepsWorkerStack(t *testing.T) {
	t.Parallel()
	released := make(chan struct{})
	var r any
	func() {
		defer func() { r = recover() }()
		parallelFor(2, 2, func(_, worker int) {
			if worker == 0 {
				<-released
				return
			}
			panicInWorker(released)
		})
	}()
	require.NotNil(t, r, "the worker's panic reaches the caller")
	rec, ok := r.(*panics.Recovered)
	require.True(t, ok, "raised as a *panics.Recovered, got %T", r)
	assert.Equal(t, "worker failed", rec.Value)
	text := fmt.Sprint(r)
	assert.Contains(t, text, "worker failed")
	assert.Contains(t, text, "kernels.panicInWorker", "the worker's stack is kept")
	assert.NotContains(t, text, "TestParallelForKeepsWorkerStack.func1()",
		"the stack is the worker's, not the caller's")
}

func TestItemGrid(t *testing.T) {
	t.Parallel()
	for _, threads := range []int{1, 2, 3, 8} {
		for _, m := range []int{1, 5, 12, 16, 100, 1000} {
			for _, nPanels := range []int{1, 3, 4, 24, 100} {
				mc, chunk := itemGrid(threads, m, nPanels, 6, 96, 16)
				require.Positive(t, chunk)
				require.Zero(t, mc%6, "mc=%d must be a multiple of mr", mc)
				require.GreaterOrEqual(t, mc, 6)
				items := ceilDiv(m, mc) * ceilDiv(nPanels, chunk)
				if threads > 1 && items < itemsPerThread*threads {
					assert.True(t, chunk == 1 && mc == 6 || mc >= m && chunk == 1,
						"threads=%d m=%d panels=%d: %d items, yet mc=%d chunk=%d could split further", threads, m, nPanels, items, mc, chunk)
				}
			}
		}
	}
}

// TestGemmUsesThreads checks that a large product really runs on several
// goroutines at once, and a small one on the caller's alone. In the threaded
// run each kernel call waits until three are running at once, which only
// three goroutines can bring about; whatever the machine's load, a pool that
// starts them gets there. A pool that did not would wait for ever, so the
// wait gives up at nine tenths of the test binary's own deadline (-timeout)
// and the assertion then fails.
func TestGemmUsesThreads(t *testing.T) {
	t.Parallel()
	var giveUp chan struct{}
	if d, ok := t.Deadline(); ok {
		giveUp = make(chan struct{})
		timer := time.AfterFunc(time.Until(d)*9/10, func() { close(giveUp) })
		defer timer.Stop()
	}
	var (
		running, peak atomic.Int32
		want          int32         // > 0: kernels wait until want run at once
		all           chan struct{} // closed when want run at once
		allOnce       sync.Once
	)
	im := *goSgemm
	im.kernel = func(k int, a []float32, rsa, csa int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, next []float32) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if want > 0 {
			if n >= want {
				allOnce.Do(func() { close(all) })
			}
			select {
			case <-all:
			case <-giveUp:
			}
		}
		goKernel4x4(k, a, rsa, csa, b, ldb, c, ldc, alpha, beta, next)
		running.Add(-1)
	}
	run := func(m, n, k, threads int, wait int32) int32 {
		peak.Store(0)
		want, all, allOnce = wait, make(chan struct{}), sync.Once{}
		a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		gemm(&im, Par{Threads: threads}, false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		return peak.Load()
	}
	assert.Equal(t, int32(1), run(256, 256, 64, 1, 0), "Threads 1")
	assert.Equal(t, int32(1), run(16, 16, 16, 4, 0), "a small product stays on the caller")
	assert.Equal(t, int32(3), run(256, 256, 64, 3, 3), "a 4M multiply-add product on 3 threads")
}

// goroutineID is the running goroutine's number, from its stack's header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return strings.Fields(string(buf))[1]
}

// TestParallelForReusesHelpers: a call's helper waits for the next call and
// runs its share there, and helpers end once no call comes (TestMain checks
// that none is left). The test's own set of helpers spins long enough that
// its helper cannot give up between the two calls, whatever the machine's
// load; a last call with the spin short again lets it end.
func TestParallelForReusesHelpers(t *testing.T) {
	t.Parallel()
	l := &helpers{spin: time.Hour}
	ids := make([]string, 2)
	call := func() {
		// Worker 1 is a helper: the caller's item waits for it, so that it
		// really takes one.
		ready := make(chan struct{})
		var once sync.Once
		l.parallelFor(2, 2, func(_, worker int) {
			if worker == 0 {
				<-ready
				return
			}
			ids[1] = goroutineID()
			once.Do(func() { close(ready) })
		})
		ids[0] = goroutineID()
	}
	call()
	first := ids[1]
	require.NotEqual(t, ids[0], first, "worker 1 is another goroutine")
	// Its helper is (or is about to be) waiting: the next call finds it.
	for {
		l.mu.Lock()
		n := len(l.hs)
		l.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	call()
	assert.Equal(t, first, ids[1], "the second call's worker 1 is the first call's helper")
	l.mu.Lock()
	l.spin = helperSpin
	l.mu.Unlock()
	call() // the helper's last share: it ends helperSpin later
}
