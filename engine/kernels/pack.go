package kernels

import "unsafe"

// copyRows, when set (amd64 with AVX), copies rows of 24, 48 or 96 bytes
// from src, srcStride bytes apart, to dst back to back; it handles no other
// width. The caller checks bounds.
var copyRows func(dst, src unsafe.Pointer, srcStride, rowBytes, rows int)

// transpose8x8, when set (amd64 with AVX), copies element (j, p) of src (row
// stride ss) to (p, j) of dst (row stride ds) for j < 8·jBlocks and
// p < 8·pBlocks, eight by eight. It checks its bounds.
var transpose8x8 func(dst []float32, ds int, src []float32, ss int, jBlocks, pBlocks int)

// packAPanel packs rows [i, i+mi) and columns [pc, pc+kb) of op(A) into one
// micro-panel of mr rows: element (i+ii, pc+p) goes to dst[p*mr+ii]. Rows
// past mi are zero.
func packAPanel[T float](tA bool, a []T, lda, i, mi, pc, kb, mr int, dst []T) {
	d := dst[:kb*mr]
	if tA {
		// op(A)(i, q) = a[q*lda+i]: each depth step is a contiguous run.
		size := int(unsafe.Sizeof(a[0]))
		if w := mr * size; mi == mr && copyRows != nil && (w == 24 || w == 48 || w == 96) {
			_ = a[(pc+kb-1)*lda+i+mr-1] // the last element copied
			copyRows(unsafe.Pointer(&d[0]), unsafe.Pointer(&a[pc*lda+i]), lda*size, w, kb)
			return
		}
		for p := range kb {
			row := d[p*mr : p*mr+mr]
			copy(row, a[(pc+p)*lda+i:][:mi])
			clear(row[mi:])
		}
		return
	}
	// op(A)(i, q) = a[i*lda+q]: each row is a contiguous run.
	for ii := range mi {
		src := a[(i+ii)*lda+pc:][:kb]
		for p, v := range src {
			d[p*mr+ii] = v
		}
	}
	for ii := mi; ii < mr; ii++ {
		for p := range kb {
			d[p*mr+ii] = 0
		}
	}
}

// packBPanel packs rows [pc, pc+kb) and columns [j0, j0+nb) of op(B) into a
// panel of kb rows of nr elements: element (pc+p, j0+jj) goes to dst[p*nr+jj].
// Columns past nb are zero.
func packBPanel[T float](tB bool, b []T, ldb, pc, kb, j0, nb, nr int, dst []T) {
	if !tB {
		// op(B)(q, j) = b[q*ldb+j].
		for p := range kb {
			row := dst[p*nr : p*nr+nr]
			copy(row, b[(pc+p)*ldb+j0:][:nb])
			clear(row[nb:])
		}
		return
	}
	// op(B)(q, j) = b[j*ldb+q]: each output column is a contiguous run.
	jDone, pDone := 0, 0
	if b32, ok := any(b).([]float32); ok && transpose8x8 != nil {
		// Whole 8×8 blocks by vector transposes, then the edges below.
		jDone, pDone = nb/8*8, kb/8*8
		transpose8x8(any(dst).([]float32), nr, b32[j0*ldb+pc:], ldb, nb/8, kb/8)
	}
	for jj := range nb {
		src := b[(j0+jj)*ldb+pc:][:kb]
		if jj < jDone {
			src = src[pDone:] // the blocks covered the first pDone
		}
		off := kb - len(src)
		for p, v := range src {
			dst[(off+p)*nr+jj] = v
		}
	}
	if nb < nr {
		for p := range kb {
			clear(dst[p*nr+nb : p*nr+nr])
		}
	}
}
