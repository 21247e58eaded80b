package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSgemmDotRowInvariant: on the sampling step's route (A·Bᵀ, 13 rows
// and the most the dot route takes), a row computed alone — by the
// two-stream 1-row kernel where the implementation has one — equals the
// same row computed among others in 4×4 tiles, bit for bit, for depths
// around the 16-lane groups, odd and even column counts, and beta ≠ 0. Continuous batching
// relies on it: a sequence's numbers must not depend on its batch.
func TestSgemmDotRowInvariant(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, im := range append([]*gemmImpl[float32]{sgemmImpl}, asmSgemmImpls()...) {
		if im.dot == nil {
			continue
		}
		for _, k := range []int{1, 15, 16, 17, 100, 1024} {
			for _, n := range []int{1, 7, 8, 9, 33, 300} {
				most := im.dot.maxRows
				if im.narrow != nil && n <= im.narrowMaxN && im.narrow.dot != nil {
					most = min(most, im.narrow.dot.maxRows) // its products take the narrow tile's routes
				}
				for _, m := range []int{min(13, most), most} {
					o := newOperands[float32](rng, shape{tB: true, m: m, n: n, k: k, padA: 1, padB: 2, padC: 0})
					c := make([]float32, m*n)
					for i := range c {
						c[i] = float32(rng.NormFloat64())
					}
					all := append([]float32(nil), c...)
					gemm(im, Par{Threads: 2}, false, true, m, n, k, 0.5, o.a, o.lda, o.b, o.ldb, 0.75, all, n)
					for i := range m {
						one := append([]float32(nil), c[i*n:(i+1)*n]...)
						gemm(im, Par{}, false, true, 1, n, k, 0.5, o.a[i*o.lda:], o.lda, o.b, o.ldb, 0.75, one, n)
						require.Equal(t, all[i*n:(i+1)*n], one, "%s k=%d n=%d: row %d alone differs from row %d among %d", im.name, k, n, i, i, m)
					}
				}
			}
		}
	}
}

// TestSgemmOneRowStreams: a 1-row product long enough to be cut into
// several runs of B's rows (the stream kernel's work items, an odd number
// of rows in some) is the same bit for bit on any number of goroutines,
// and equals the same row computed among four others in 4×4 tiles.
func TestSgemmOneRowStreams(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	for _, im := range append([]*gemmImpl[float32]{sgemmImpl}, asmSgemmImpls()...) {
		if im.dot == nil || im.dot.maxRows < 5 {
			continue
		}
		const m, n, k = 5, 2999, 1031
		o := newOperands[float32](rng, shape{tB: true, m: m, n: n, k: k, padA: 1, padB: 2})
		c := make([]float32, m*n)
		for i := range c {
			c[i] = float32(rng.NormFloat64())
		}
		all := append([]float32(nil), c...)
		gemm(im, Par{Threads: 1}, false, true, m, n, k, 0.5, o.a, o.lda, o.b, o.ldb, 0.75, all, n)
		for _, th := range []int{1, 2, 3, 8} {
			one := append([]float32(nil), c[:n]...)
			gemm(im, Par{Threads: th}, false, true, 1, n, k, 0.5, o.a, o.lda, o.b, o.ldb, 0.75, one, n)
			require.Equal(t, all[:n], one, "%s threads %d: the row alone differs from the row among %d", im.name, th, m)
		}
	}
}
