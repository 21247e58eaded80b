package kernels

import "fmt"

// checkGemm panics, in the manner of BLAS's xerbla, when the arguments of a
// GEMM call cannot describe matrices held by the given slices. name is the
// routine ("Sgemm" or "Dgemm"); la, lb, lc are the slice lengths.
func checkGemm(name string, transA, transB bool, m, n, k, lda, ldb, ldc, la, lb, lc int) {
	switch {
	case m < 0:
		panic(fmt.Sprintf("kernels: %s: m = %d, must be >= 0", name, m))
	case n < 0:
		panic(fmt.Sprintf("kernels: %s: n = %d, must be >= 0", name, n))
	case k < 0:
		panic(fmt.Sprintf("kernels: %s: k = %d, must be >= 0", name, k))
	}
	// Stored shapes (row-major): A is m×k, or k×m when transposed; likewise B.
	rowsA, colsA := m, k
	if transA {
		rowsA, colsA = k, m
	}
	rowsB, colsB := k, n
	if transB {
		rowsB, colsB = n, k
	}
	checkMatrix(name, "a", "lda", transA, rowsA, colsA, lda, la)
	checkMatrix(name, "b", "ldb", transB, rowsB, colsB, ldb, lb)
	checkMatrix(name, "c", "ldc", false, m, n, ldc, lc)
}

// checkMatrix checks one stored rows×cols row-major matrix with row stride ld
// held in a slice of length length.
func checkMatrix(name, arg, ldName string, trans bool, rows, cols, ld, length int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("kernels: %s: %s = %d, must be >= max(1, %d) (the row length of the stored %s, trans=%t)",
			name, ldName, ld, cols, arg, trans))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if need := (rows-1)*ld + cols; length < need {
		panic(fmt.Sprintf("kernels: %s: len(%s) = %d, need at least %d for a stored %d×%d matrix with %s = %d",
			name, arg, length, need, rows, cols, ldName, ld))
	}
}

// checkSameLen panics when two vector arguments differ in length.
func checkSameLen(name string, lx, ly int) {
	if lx != ly {
		panic(fmt.Sprintf("kernels: %s: len(x) = %d and len(y) = %d, must be equal", name, lx, ly))
	}
}
