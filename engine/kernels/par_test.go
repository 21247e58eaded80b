package kernels

import (
	"runtime"
	"sync/atomic"
	"testing"

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

// TestParallelForPanics checks that a panic in a worker goroutine reaches the
// caller after every goroutine has stopped (TestMain checks for leaks).
func TestParallelForPanics(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "boom", func() {
		parallelFor(4, 100, func(item, _ int) {
			if item == 37 {
				panic("boom")
			}
		})
	})
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
// goroutines at once, and a small one on the caller's alone.
func TestGemmUsesThreads(t *testing.T) {
	t.Parallel()
	var running, peak atomic.Int32
	im := *goSgemm
	im.kernel = func(k int, a []float32, rsa, csa int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		goKernel4x4(k, a, rsa, csa, b, ldb, c, ldc, alpha, beta)
		runtime.Gosched() // let the other goroutine overlap even on one CPU
		running.Add(-1)
	}
	run := func(m, n, k, threads int) int32 {
		peak.Store(0)
		a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		gemm(&im, Par{Threads: threads}, false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		return peak.Load()
	}
	assert.Equal(t, int32(1), run(256, 256, 64, 1), "Threads 1")
	assert.Equal(t, int32(1), run(16, 16, 16, 4), "a small product stays on the caller")
	assert.Equal(t, int32(3), run(256, 256, 64, 3), "a 4M multiply-add product on 3 threads")
}
