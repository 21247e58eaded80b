package kernels

// packABlock packs rows [i0, i0+mb) and columns [pc, pc+kb) of op(A) into
// micro-panels of mr rows: panel ip holds element (i0+ip*mr+ii, pc+p) at
// dst[ip*kb*mr + p*mr + ii]. Rows past mb in the last panel are zero.
func packABlock[T float](tA bool, a []T, lda, i0, mb, pc, kb, mr int, dst []T) {
	for ip := 0; ip*mr < mb; ip++ {
		d := dst[ip*kb*mr : (ip+1)*kb*mr]
		i := i0 + ip*mr
		mi := min(mr, mb-ip*mr)
		if tA {
			// op(A)(i, q) = a[q*lda+i]: each depth step is a contiguous run.
			for p := range kb {
				row := d[p*mr : p*mr+mr]
				copy(row, a[(pc+p)*lda+i:][:mi])
				clear(row[mi:])
			}
			continue
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
	for jj := range nb {
		src := b[(j0+jj)*ldb+pc:][:kb]
		for p, v := range src {
			dst[p*nr+jj] = v
		}
	}
	if nb < nr {
		for p := range kb {
			clear(dst[p*nr+nb : p*nr+nr])
		}
	}
}
