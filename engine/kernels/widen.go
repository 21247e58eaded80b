package kernels

import "sync"

// Blocks of widenGemm. widenElems bounds a block's float32 copy (4 MiB):
// it stays in L2 while Sgemm packs it, and a product's scratch does not
// grow with the vocabulary. widenCols is the column granularity: a
// multiple of every implementation's nr, so column blocks cut C along tile
// boundaries; widenFewRows is the most rows of A for which each goroutine
// widens and runs its own blocks of widenCols columns (the sampling step,
// bound by memory); widenDepth is the depth granularity, the kernels'
// depth pass (kc = 256 in every implementation).
const (
	widenElems   = 1 << 20
	widenCols    = 64
	widenFewRows = 16
	widenDepth   = 256
)

// widenTail: a last column block that would have at most this many
// columns is run with the block before it, so that no block takes a
// narrower route than the whole product (Sgemm sends products with
// n <= 16 to narrower kernels, which round differently).
const widenTail = 32

var widenPool = sync.Pool{New: func() any { return new([]float32) }}

// widenGemm runs a product with a 16-bit B (BF16 or F16) as Sgemm over
// blocks of B widened to float32 by widen, computing, bit for bit and for
// every Par.Threads value, what Sgemm computes on all of B widened:
//
//   - op(B) = Bᵀ: blocks of op(B)'s columns (whole rows of the stored B),
//     each starting on a multiple of widenCols and none narrower than
//     widenTail unless the whole product is, so that every element of C is
//     computed by the kernel and route Sgemm would use. With at most
//     widenFewRows rows of A each goroutine widens blocks of widenCols
//     columns into its own scratch and runs them on one thread; larger
//     products widen a block of up to widenElems on all threads and run it
//     on all threads.
//   - op(B) = B: blocks of depth, multiples of widenDepth rows, run one
//     after the other on all threads, the first with beta and the others
//     adding to C: Sgemm sums in passes of widenDepth rows, adding each
//     pass to C (alpha·s + 1·C), so the blocks repeat its passes exactly.
func widenGemm[W BF16 | F16](p Par, widen func([]float32, []W), transB bool, m, n, k int, alpha float32, a []float32, lda int, b []W, ldb int, beta float32, c []float32, ldc int) {
	widenGemmBlocks(p, widen, widenElems, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// widenGemmBlocks is widenGemm with blocks of up to elems elements (tests
// use small ones to cross block boundaries on small products).
func widenGemmBlocks[W BF16 | F16](p Par, widen func([]float32, []W), elems int, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []W, ldb int, beta float32, c []float32, ldc int) {
	if transB && m <= widenFewRows {
		blocks := widenBlocks(n, widenCols)
		threads := p.workers(len(blocks)-1, int64(n)*int64(k), minStreamPerThread)
		bufs := takeScratch[float32](&widenPool, threads)
		defer putScratch(&widenPool, bufs)
		parallelFor(threads, len(blocks)-1, func(i, w int) {
			j0, nb := blocks[i], blocks[i+1]-blocks[i]
			wb := growSlice(bufs[w], nb*k)
			for r := range nb {
				widen(wb[r*k:(r+1)*k], b[(j0+r)*ldb:][:k])
			}
			Par{Threads: 1}.Sgemm(false, true, m, nb, k, alpha, a, lda, wb, k, beta, c[j0:], ldc)
		})
		return
	}
	buf := widenPool.Get().(*[]float32)
	defer widenPool.Put(buf)
	if transB {
		width := max(widenCols, elems/k/widenCols*widenCols)
		blocks := widenBlocks(n, width)
		for i := range len(blocks) - 1 {
			j0, nb := blocks[i], blocks[i+1]-blocks[i]
			wb := growSlice(buf, nb*k)
			widenRows(p, nb, k, func(r int) { widen(wb[r*k:(r+1)*k], b[(j0+r)*ldb:][:k]) })
			p.Sgemm(false, true, m, nb, k, alpha, a, lda, wb, k, beta, c[j0:], ldc)
		}
		return
	}
	depth := max(widenDepth, elems/n/widenDepth*widenDepth)
	for p0 := 0; p0 < k; p0 += depth {
		kb := min(depth, k-p0)
		wb := growSlice(buf, kb*n)
		widenRows(p, kb, n, func(r int) { widen(wb[r*n:(r+1)*n], b[(p0+r)*ldb:][:n]) })
		bet := beta
		if p0 > 0 {
			bet = 1
		}
		p.Sgemm(false, false, m, n, kb, alpha, a[p0:], lda, wb, n, bet, c, ldc)
	}
}

// widenRows runs f(r) for r < count, rows of rowLen elements each, on up
// to p.Threads goroutines: widening streams from memory, a share of the
// rows each.
func widenRows(p Par, count, rowLen int, f func(r int)) {
	const chunk = 16
	threads := p.workers(ceilDiv(count, chunk), int64(count)*int64(rowLen), minStreamPerThread)
	parallelFor(threads, ceilDiv(count, chunk), func(item, _ int) {
		for r := item * chunk; r < min((item+1)*chunk, count); r++ {
			f(r)
		}
	})
}

// widenBlocks returns the block boundaries of n columns, width at a time:
// 0, width, 2·width, …, n, the last block widened by a tail of at most
// widenTail columns instead of running it alone.
func widenBlocks(n, width int) []int {
	bounds := []int{0}
	for j := 0; j < n; {
		next := min(j+width, n)
		if n-next <= widenTail {
			next = n
		}
		bounds = append(bounds, next)
		j = next
	}
	return bounds
}
