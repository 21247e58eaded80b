package kernels

import (
	"os"
	"sync"
)

// EnvKernels names the environment variable that, set to "purego" before
// the program starts, disables the assembly kernels (as the purego build tag
// does). Used to test the portable path on machines that have AVX2.
const EnvKernels = "TANDEM_KERNELS"

// Portable implementations, used where no assembly applies.
var (
	goSgemm = &gemmImpl[float32]{
		name: "go4x4", mr: 4, nr: 4, kernel: goKernel4x4[float32],
		kc: 256, mc: 64, chunk: 64,
		packBMinRows: 16, packAMinPanels: never, packATransMinPanels: 1,
		pool: new(sync.Pool),
	}
	goDgemm = &gemmImpl[float64]{
		name: "go4x4", mr: 4, nr: 4, kernel: goKernel4x4[float64],
		kc: 256, mc: 64, chunk: 64,
		packBMinRows: 16, packAMinPanels: never, packATransMinPanels: 1,
		pool: new(sync.Pool),
	}
)

// The implementations in use, chosen once at initialisation (see arch_*.go).
var (
	sgemmImpl = goSgemm
	dgemmImpl = goDgemm
	sdotImpl  = goDot[float32]
	ddotImpl  = goDot[float64]
	saxpyImpl = goAxpy[float32]
	daxpyImpl = goAxpy[float64]
)

// asmDisabled reports whether the environment asks for the portable kernels.
func asmDisabled() bool { return os.Getenv(EnvKernels) == "purego" }

// Implementation names the kernels in use, e.g. "avx2-6x16" or "go4x4".
func Implementation() string { return sgemmImpl.name }

// Sgemm computes C = alpha·op(A)·op(B) + beta·C in float32, where op(X) is X,
// or Xᵀ when transX is true; op(A) is m×k, op(B) is k×n and C is m×n. All
// matrices are row-major: lda, ldb and ldc are the row strides of A, B and C
// as stored (so A stored k×m when transA needs lda >= m). When beta == 0, C is
// overwritten and its previous contents, NaNs included, are ignored.
//
// Sgemm panics, naming the argument, when a dimension is negative, a stride is
// shorter than its row, or a slice is too short for the matrix it holds.
// The result does not depend on p.Threads (see the package documentation).
// A and B are only read; C must not overlap them. Safe for concurrent use
// on disjoint C.
func (p Par) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm("Sgemm", transA, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	gemm(sgemmImpl, p, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dgemm is Sgemm in float64.
func (p Par) Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	checkGemm("Dgemm", transA, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	gemm(dgemmImpl, p, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Sdot returns Σ x[i]·y[i]. It panics when len(x) != len(y). The summation
// order is fixed by the length, so equal inputs give bit-identical results.
func Sdot(x, y []float32) float32 {
	checkSameLen("Sdot", len(x), len(y))
	return sdotImpl(x, y)
}

// Saxpy computes y += alpha·x. It panics when len(x) != len(y).
func Saxpy(alpha float32, x, y []float32) {
	checkSameLen("Saxpy", len(x), len(y))
	saxpyImpl(alpha, x, y)
}

// Ddot is Sdot in float64.
func Ddot(x, y []float64) float64 {
	checkSameLen("Ddot", len(x), len(y))
	return ddotImpl(x, y)
}

// Daxpy is Saxpy in float64.
func Daxpy(alpha float64, x, y []float64) {
	checkSameLen("Daxpy", len(x), len(y))
	daxpyImpl(alpha, x, y)
}
