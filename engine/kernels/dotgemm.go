package kernels

// dotKernel computes a tile of mr rows of op(A) = A against nr rows of the
// stored B (op(B) = Bᵀ), each element a dot product of two contiguous
// length-k rows: C = alpha·A·Bᵀ + beta·C for rows a[r*lda:], b[j*ldb:]. k >= 1.
// When beta == 0, C is not read. Each element's summation order depends on k
// only.
type dotKernel[T float] func(k int, a []T, lda int, b []T, ldb int, c []T, ldc int, alpha, beta T)

// dotRowKernel computes C[0:rowNR] = alpha·a·Bᵀ + beta·C for one row a
// of length k >= 1 and rowNR rows b[j*ldb:].
type dotRowKernel[T float] func(k int, a, b []T, ldb int, c []T, alpha, beta T)

// rowNR is how many rows of B a dotRowKernel takes.
const rowNR = 8

// dotImpl is the path for C = alpha·A·Bᵀ + beta·C with few rows of A (the
// engine's sampling step): no packing, every row read in place.
type dotImpl[T float] struct {
	mr, nr int
	kernel dotKernel[T]
	// row, when set, computes one row of A against rowNR rows of B, each
	// element exactly as kernel does, for m == 1.
	row     dotRowKernel[T]
	maxRows int // used when m <= maxRows
	chunk   int // column tiles per work item
}

// dotGemm runs the dot path. Arguments must have been checked; k >= 1 and
// alpha != 0. Like gemm, it cuts C into a fixed grid of mr×nr tiles from
// (0, 0) and computes edge tiles with the same kernel on zero-padded copies,
// so the result does not depend on par.
func dotGemm[T float](im *gemmImpl[T], par Par, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	d := im.dot
	if m == 1 && d.row != nil {
		dotRow(im, par, n, k, alpha, a, b, ldb, beta, c)
		return
	}
	mr, nr := d.mr, d.nr
	rowBlocks := ceilDiv(m, mr)
	colTiles := ceilDiv(n, nr)
	threads := im.threads(par, colTiles, int64(m)*int64(n)*int64(k))
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
		scratch[w] = im.getBuf(nr*k + mr*nr)
	}
	defer func() {
		for _, s := range scratch {
			im.putBuf(s)
		}
	}()

	parallelFor(threads, items, func(item, w int) {
		s := *scratch[w]
		bEdge, tile := s[:nr*k], s[nr*k:]
		for jt := item * chunk; jt < min((item+1)*chunk, colTiles); jt++ {
			j0 := jt * nr
			nb := min(nr, n-j0)
			bp, ldbp := b[j0*ldb:], ldb
			if nb < nr {
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

// dotRow is dotGemm for one row of A: rowNR columns of C at a time, the
// last ones through a zero-padded copy of B's rows and a scratch tile.
func dotRow[T float](im *gemmImpl[T], par Par, n, k int, alpha T, a, b []T, ldb int, beta T, c []T) {
	d := im.dot
	colTiles := ceilDiv(n, rowNR)
	threads := im.threads(par, colTiles, int64(n)*int64(k))
	const chunk = 16
	items := ceilDiv(colTiles, chunk)
	threads = min(threads, items)
	parallelFor(threads, items, func(item, _ int) {
		for jt := item * chunk; jt < min((item+1)*chunk, colTiles); jt++ {
			j0 := jt * rowNR
			nb := n - j0
			if nb >= rowNR {
				d.row(k, a, b[j0*ldb:], ldb, c[j0:], alpha, beta)
				continue
			}
			buf := im.getBuf(rowNR * k)
			edge := *buf
			for j := range rowNR {
				if j < nb {
					copy(edge[j*k:(j+1)*k], b[(j0+j)*ldb:][:k])
				} else {
					clear(edge[j*k : (j+1)*k])
				}
			}
			var tile [rowNR]T
			if beta != 0 {
				copy(tile[:nb], c[j0:n])
			}
			d.row(k, a, edge, k, tile[:], alpha, beta)
			copy(c[j0:n], tile[:nb])
			im.putBuf(buf)
		}
	})
}
