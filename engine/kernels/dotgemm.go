package kernels

import "sync"

// dotKernel computes a tile of mr rows of op(A) = A against nr rows of the
// stored B (op(B) = Bᵀ), each element a dot product of two contiguous
// length-k rows: C = alpha·A·Bᵀ + beta·C for rows a[r*lda:], b[j*ldb:]. k >= 1.
// When beta == 0, C is not read. Each element's summation order depends on k
// only.
//
// B's elements are of type B: T, or F16 for SgemmF16's kernels, which
// widen each element exactly on loading it and otherwise compute as the
// float32 kernels do.
type dotKernel[T float, B any] func(k int, a []T, lda int, b []B, ldb int, c []T, ldc int, alpha, beta T)

// dotStreamKernel computes, for i < rows, c0[i] = alpha·a·b0[i*ldb:]ᵀ +
// beta·c0[i] and c1[i] = alpha·a·b1[i*ldb:]ᵀ + beta·c1[i], for one row a
// of length k >= 1: the rows of two runs of B in pairs, so that B is read
// as two sequential streams. When beta == 0, C is not read.
type dotStreamKernel[A, B any, T float] func(k int, a []A, b0, b1 []B, rows, ldb int, c0, c1 []T, alpha, beta T)

// dotImpl is the path for C = alpha·A·Bᵀ + beta·C with few rows of A (the
// engine's sampling step): no packing, every row read in place.
type dotImpl[T float] = dotImplOf[T, T]

// dotImplOf is a dotImpl whose B has elements of type B.
type dotImplOf[T float, B any] struct {
	mr, nr int
	kernel dotKernel[T, B]
	// stream, when set, computes C for one row of A (m == 1), each
	// element exactly as kernel does.
	stream  dotStreamKernel[T, B, T]
	maxRows int // used when m <= maxRows
	chunk   int // column tiles per work item
	// edges holds the zero-padded copies of B's last tile (*[]B); nil:
	// the gemmImpl's pool.
	edges *sync.Pool
}

// dotGemm runs the dot path. Arguments must have been checked; k >= 1 and
// alpha != 0. Like gemm, it cuts C into a fixed grid of mr×nr tiles from
// (0, 0) and computes edge tiles with the same kernel on zero-padded copies,
// so the result does not depend on par.
func dotGemm[T float, B any](im *gemmImpl[T], d *dotImplOf[T, B], par Par, m, n, k int, alpha T, a []T, lda int, b []B, ldb int, beta T, c []T, ldc int) {
	if m == 1 && d.stream != nil {
		streamRows(im.streamThreads(par, n, int64(n)*int64(k)), d.stream, n, k, alpha, a, b, ldb, beta, c)
		return
	}
	edges := d.edgePool(im)
	mr, nr := d.mr, d.nr
	rowBlocks := ceilDiv(m, mr)
	colTiles := ceilDiv(n, nr)
	// Few rows: streaming B can cost more than the arithmetic.
	threads := max(im.threads(par, colTiles, int64(m)*int64(n)*int64(k)), im.streamThreads(par, colTiles, int64(n)*int64(k)))
	_, chunk := itemGrid(threads, 1, colTiles, 1, 1, d.chunk)
	items := ceilDiv(colTiles, chunk)
	threads = min(threads, items)

	// Padded copies of the last, partial row block of A (shared, read-only)
	// and, per worker, of the last partial column tile of B, plus a tile.
	var aEdge []T
	if m%mr != 0 {
		buf := im.getBuf(mr * k)
		defer im.putBuf(buf)
		aEdge = *buf
		i0 := (rowBlocks - 1) * mr
		for r := range mr {
			row := aEdge[r*k : (r+1)*k]
			if i0+r < m {
				copy(row, a[(i0+r)*lda:][:k])
			} else {
				clear(row)
			}
		}
	}
	scratch := make([]*[]T, threads)
	for w := range scratch {
		scratch[w] = im.getBuf(mr * nr)
	}
	edgeBufs := make([]*[]B, threads)
	for w := range edgeBufs {
		edgeBufs[w] = poolSlice[B](edges)
	}
	defer func() {
		for _, s := range scratch {
			im.putBuf(s)
		}
		for _, s := range edgeBufs {
			edges.Put(s)
		}
	}()

	parallelFor(threads, items, func(item, w int) {
		tile := *scratch[w]
		var bEdge []B
		for jt := item * chunk; jt < min((item+1)*chunk, colTiles); jt++ {
			j0 := jt * nr
			nb := min(nr, n-j0)
			bp, ldbp := b[j0*ldb:], ldb
			if nb < nr {
				bEdge = growSlice(edgeBufs[w], nr*k)
				for j := range nr {
					row := bEdge[j*k : (j+1)*k]
					if j < nb {
						copy(row, b[(j0+j)*ldb:][:k])
					} else {
						clear(row)
					}
				}
				bp, ldbp = bEdge, k
			}
			for ib := range rowBlocks {
				i0 := ib * mr
				mi := min(mr, m-i0)
				ap, ldap := a[i0*lda:], lda
				if mi < mr {
					ap, ldap = aEdge, k
				}
				if mi == mr && nb == nr {
					d.kernel(k, ap, ldap, bp, ldbp, c[i0*ldc+j0:], ldc, alpha, beta)
					continue
				}
				if beta != 0 {
					for r := range mi {
						copy(tile[r*nr:r*nr+nb], c[(i0+r)*ldc+j0:][:nb])
					}
				}
				d.kernel(k, ap, ldap, bp, ldbp, tile, nr, alpha, beta)
				for r := range mi {
					copy(c[(i0+r)*ldc+j0:][:nb], tile[r*nr:r*nr+nb])
				}
			}
		}
	})
}

// streamItemElems is about how many elements of B one work item of
// streamRows reads (1 MiB in bfloat16): items this long keep each
// goroutine's two streams long enough for the prefetchers, and more items
// than goroutines let one take over from another slowed by other work.
const streamItemElems = 1 << 19

// streamRows computes C = alpha·a·Bᵀ + beta·C for one row a by stream: C's
// n columns are cut into contiguous runs of rows of B, each read as two
// streams (its first and second half side by side) by one of threads
// goroutines. The last row of a run of
// odd length is computed alone, against itself as the second stream.
// Every element is the kernel's, so the result does not depend on par.
func streamRows[A, B any, T float](threads int, stream dotStreamKernel[A, B, T], n, k int, alpha T, a []A, b []B, ldb int, beta T, c []T) {
	items := max(threads, int(min(int64(n), int64(n)*int64(k)/streamItemElems)))
	parallelFor(threads, items, func(item, _ int) {
		r0, r1 := item*n/items, (item+1)*n/items
		half := (r1 - r0) / 2
		if half > 0 {
			m0 := r0 + half
			stream(k, a, b[r0*ldb:], b[m0*ldb:], half, ldb, c[r0:m0], c[m0:m0+half], alpha, beta)
		}
		if (r1-r0)%2 != 0 {
			last := r1 - 1
			var spare [1]T
			stream(k, a, b[last*ldb:], b[last*ldb:], 1, ldb, c[last:r1], spare[:], alpha, beta)
		}
	})
}

// edgePool is where d's zero-padded copies of B's last tile come from:
// d.edges, or im's pool when B's elements are im's.
func (d *dotImplOf[T, B]) edgePool(im *gemmImpl[T]) *sync.Pool {
	if d.edges != nil {
		return d.edges
	}
	return im.pool
}

// poolSlice takes a slice from p, or a new one when p has none (of B).
func poolSlice[B any](p *sync.Pool) *[]B {
	if v, ok := p.Get().(*[]B); ok {
		return v
	}
	return new([]B)
}

// growSlice returns (*buf)[:n], reallocated when shorter.
func growSlice[B any](buf *[]B, n int) []B {
	if cap(*buf) < n {
		*buf = make([]B, n)
	}
	return (*buf)[:n]
}
