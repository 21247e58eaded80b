package engine

import (
	"github.com/tandemrl/tandem/engine/kernels"
)

// par runs work on up to threads goroutines (0 or 1: the calling goroutine
// only). Work is always split over independent outputs, so results do not
// depend on threads.
type par struct{ threads int }

// forEach calls fn on contiguous chunks [lo, hi) covering [0, n), on up to
// p.threads goroutines, and returns when all calls have returned. minChunk
// bounds the chunk size from below so tiny problems stay on one goroutine.
func (p par) forEach(n, minChunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	t := p.threads
	if minChunk < 1 {
		minChunk = 1
	}
	if m := n / minChunk; t > m {
		t = m
	}
	if t <= 1 {
		fn(0, n)
		return
	}
	chunk := (n + t - 1) / t
	kernels.Par{Threads: t}.Do((n+chunk-1)/chunk, func(i, _ int) {
		fn(i*chunk, min((i+1)*chunk, n))
	})
}

// gemm computes C = alpha·op(A)·op(B) + beta·C with row-major matrices, where
// op(X) is X or Xᵀ, op(A) is m×k and op(B) is k×n (BLAS semantics). Every
// element of C is summed over k in increasing order, so the result does not
// depend on p.threads. When beta is 0, C need not be initialized.
//
// This is the engine's one matrix-product entry point; a faster kernel can
// replace its body without touching callers.
func gemm[T Float](p par, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	kp := kernels.Par{Threads: p.threads}
	switch av := any(a).(type) {
	case []float32:
		kp.Sgemm(transA, transB, m, n, k, float32(alpha), av, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
		return
	case []float64:
		kp.Dgemm(transA, transB, m, n, k, float64(alpha), av, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
		return
	}
	naiveGemm(p, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// naiveGemm is gemm in plain Go, for element types the kernels do not take
// (named float types) and as the reference in tests.
func naiveGemm[T Float](p par, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	// Rows of C are independent; aim for chunks of ≥ 64k multiply-adds.
	minRows := max(1, (1<<16)/max(1, n*k))
	p.forEach(m, minRows, func(lo, hi int) {
		gemmRows(transA, transB, lo, hi, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	})
}

func gemmRows[T Float](transA, transB bool, lo, hi, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	for i := lo; i < hi; i++ {
		ci := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(ci)
		} else if beta != 1 {
			for j := range ci {
				ci[j] *= beta
			}
		}
	}
	switch {
	case !transA && transB: // C[i,j] += alpha·Σ_l A[i,l]·B[j,l]
		for i := lo; i < hi; i++ {
			ai := a[i*lda : i*lda+k]
			ci := c[i*ldc : i*ldc+n]
			for j := range ci {
				ci[j] += alpha * dot(ai, b[j*ldb:j*ldb+k])
			}
		}
	case !transA && !transB: // C[i,:] += alpha·A[i,l]·B[l,:]
		for i := lo; i < hi; i++ {
			ai := a[i*lda : i*lda+k]
			ci := c[i*ldc : i*ldc+n]
			for l, av := range ai {
				if av != 0 {
					axpy(alpha*av, b[l*ldb:l*ldb+n], ci)
				}
			}
		}
	case transA && !transB: // C[i,:] += alpha·A[l,i]·B[l,:]
		for l := 0; l < k; l++ {
			al := a[l*lda:]
			bl := b[l*ldb : l*ldb+n]
			for i := lo; i < hi; i++ {
				if av := al[i]; av != 0 {
					axpy(alpha*av, bl, c[i*ldc:i*ldc+n])
				}
			}
		}
	default: // C[i,j] += alpha·Σ_l A[l,i]·B[j,l]
		for i := lo; i < hi; i++ {
			ci := c[i*ldc : i*ldc+n]
			for j := range ci {
				var s T
				for l := 0; l < k; l++ {
					s += a[l*lda+i] * b[j*ldb+l]
				}
				ci[j] += alpha * s
			}
		}
	}
}

// dot returns Σ x[i]·y[i] in an order fixed by len(x).
func dot[T Float](x, y []T) T {
	y = y[:len(x)]
	switch xv := any(x).(type) {
	case []float32:
		return T(kernels.Sdot(xv, any(y).([]float32)))
	case []float64:
		return T(kernels.Ddot(xv, any(y).([]float64)))
	}
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy computes y += alpha·x.
func axpy[T Float](alpha T, x, y []T) {
	y = y[:len(x)]
	switch xv := any(x).(type) {
	case []float32:
		kernels.Saxpy(float32(alpha), xv, any(y).([]float32))
		return
	case []float64:
		kernels.Daxpy(float64(alpha), xv, any(y).([]float64))
		return
	}
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += alpha * x[i]
		y[i+1] += alpha * x[i+1]
		y[i+2] += alpha * x[i+2]
		y[i+3] += alpha * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += alpha * x[i]
	}
}
