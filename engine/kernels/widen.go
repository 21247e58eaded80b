package kernels

import "sync"

// widenBlock is how many of op(B)'s columns widenGemm widens at a time
// for products with more rows than the sampling step's: a multiple of
// every implementation's nr, so the blocks cut C along tile boundaries,
// and few enough that the float32 copy of a block of a 1024-deep B stays
// within L2 (1 MiB). widenBlockFew is the block for at most
// widenFewRows rows of A, handed to the goroutines one block each.
const (
	widenBlock    = 256
	widenBlockFew = 64
	widenFewRows  = 16
)

// widenTail: a last block would have at most this many columns is run
// with the block before it, so that no block takes a narrower route than
// the whole product (Sgemm sends products with n <= 16 to narrower
// kernels, which round differently).
const widenTail = 32

var widenPool = sync.Pool{New: func() any { return new([]float32) }}

// widenGemm runs a product with a 16-bit B (BF16 or F16) as Sgemm over
// blocks of op(B)'s columns widened to float32 by widen. Each block starts
// on a multiple of widenBlockFew columns and none is narrower than
// widenTail unless the whole product is, so every element of C is computed
// by the kernel, over the depth passes, that Sgemm on the widened B would
// use: the result is Sgemm's, bit for bit, for every Par.Threads value.
//
// With at most widenFewRows rows (the sampling step, bound by memory) each
// goroutine widens blocks of widenBlockFew columns into its own scratch
// and runs them on one thread; larger products widen a block on all
// threads and run it on all threads.
func widenGemm[W BF16 | F16](p Par, widen func([]float32, []W), transB bool, m, n, k int, alpha float32, a []float32, lda int, b []W, ldb int, beta float32, c []float32, ldc int) {
	// block widens op(B)'s columns [j0, j0+nb) into w, count rows of
	// rowLen elements through rows, and runs them.
	block := func(p Par, w []float32, j0, nb int, rows func(p Par, count, rowLen int, f func(r int))) {
		if transB {
			rows(p, nb, k, func(r int) { widen(w[r*k:(r+1)*k], b[(j0+r)*ldb:][:k]) })
			p.Sgemm(false, true, m, nb, k, alpha, a, lda, w, k, beta, c[j0:], ldc)
			return
		}
		rows(p, k, nb, func(r int) { widen(w[r*nb:(r+1)*nb], b[r*ldb+j0:][:nb]) })
		p.Sgemm(false, false, m, nb, k, alpha, a, lda, w, nb, beta, c[j0:], ldc)
	}
	width := widenBlock
	if m <= widenFewRows {
		width = widenBlockFew
	}
	blocks := widenBlocks(n, width)
	if m <= widenFewRows {
		threads := p.workers(len(blocks)-1, int64(n)*int64(k), minStreamPerThread)
		bufs := takeScratch[float32](&widenPool, threads)
		defer putScratch(&widenPool, bufs)
		serial := func(_ Par, count, _ int, f func(r int)) {
			for r := range count {
				f(r)
			}
		}
		parallelFor(threads, len(blocks)-1, func(i, w int) {
			j0, nb := blocks[i], blocks[i+1]-blocks[i]
			block(Par{Threads: 1}, growSlice(bufs[w], nb*k), j0, nb, serial)
		})
		return
	}
	buf := widenPool.Get().(*[]float32)
	defer widenPool.Put(buf)
	// Widening streams the block from memory: on all threads, a share of
	// its rows each.
	shared := func(p Par, count, rowLen int, f func(r int)) {
		const chunk = 16
		threads := p.workers(ceilDiv(count, chunk), int64(count)*int64(rowLen), minStreamPerThread)
		parallelFor(threads, ceilDiv(count, chunk), func(item, _ int) {
			for r := item * chunk; r < min((item+1)*chunk, count); r++ {
				f(r)
			}
		})
	}
	for i := range len(blocks) - 1 {
		j0, nb := blocks[i], blocks[i+1]-blocks[i]
		block(p, growSlice(buf, nb*k), j0, nb, shared)
	}
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
