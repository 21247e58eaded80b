package engine

import "github.com/tandemrl/tandem/engine/kernels"

// frozen is a base weight matrix (out×in, row-major) as the kernels read it:
// never written through this view. It is the seam for the storage types of
// the frozen base: [dense] holds []T, [bf16Dense] bfloat16 (a model's
// [MatricesBF16]); nothing above [linear] depends on which. Full-parameter
// training, which writes the weights, keeps dense []T.
type frozen[T Float] interface {
	// mulT computes y = x·Wᵀ for n rows of x (n×in) into y (n×out),
	// overwriting y (beta 0) or adding to it (beta 1).
	mulT(p par, n int, x []T, beta T, y []T)
	// mul computes dx = dy·W for n rows of dy (n×out) into dx (n×in),
	// overwriting (beta 0) or adding (beta 1).
	mul(p par, n int, dy []T, beta T, dx []T)
	// row copies row i (length in) into dst.
	row(i int, dst []T)
}

// dense is a frozen matrix stored as []T.
type dense[T Float] struct {
	w       []T
	out, in int
}

func (d dense[T]) mulT(p par, n int, x []T, beta T, y []T) {
	gemm(p, false, true, n, d.out, d.in, 1, x, d.in, d.w, d.in, beta, y, d.out)
}

func (d dense[T]) mul(p par, n int, dy []T, beta T, dx []T) {
	gemm(p, false, false, n, d.in, d.out, 1, dy, d.out, d.w, d.in, beta, dx, d.in)
}

func (d dense[T]) row(i int, dst []T) { copy(dst[:d.in], d.w[i*d.in:(i+1)*d.in]) }

// bf16Dense is a frozen matrix stored in bfloat16. Its products run on
// kernels.Par.SgemmBF16 for float32; for float64 (reference computations)
// it widens the weights a block of rows at a time.
type bf16Dense[T Float] struct {
	w       []kernels.BF16
	out, in int
}

func (d bf16Dense[T]) mulT(p par, n int, x []T, beta T, y []T) {
	if n == 0 {
		return
	}
	if xs, ok := any(x).([]float32); ok {
		kernels.Par{Threads: p.threads}.SgemmBF16(true, n, d.out, d.in, 1, xs, d.in, d.w, d.in, float32(beta), any(y).([]float32), d.out)
		return
	}
	d.widened(func(w []T, r0, rows int) {
		gemm(p, false, true, n, rows, d.in, 1, x, d.in, w, d.in, beta, y[r0:], d.out)
	})
}

func (d bf16Dense[T]) mul(p par, n int, dy []T, beta T, dx []T) {
	if n == 0 {
		return
	}
	if ys, ok := any(dy).([]float32); ok {
		kernels.Par{Threads: p.threads}.SgemmBF16(false, n, d.in, d.out, 1, ys, d.out, d.w, d.in, float32(beta), any(dx).([]float32), d.in)
		return
	}
	first := true
	d.widened(func(w []T, r0, rows int) {
		bt := T(1)
		if first {
			bt, first = beta, false
		}
		gemm(p, false, false, n, d.in, rows, 1, dy[r0:], d.out, w, d.in, bt, dx, d.in)
	})
}

func (d bf16Dense[T]) row(i int, dst []T) { widenInto(dst[:d.in], d.w[i*d.in:(i+1)*d.in]) }

// widened calls f on blocks of at most 256 rows of the matrix widened to
// T, with the first row's index and the block's rows.
func (d bf16Dense[T]) widened(f func(w []T, r0, rows int)) {
	const block = 256
	buf := make([]T, min(block, d.out)*d.in)
	for r0 := 0; r0 < d.out; r0 += block {
		rows := min(block, d.out-r0)
		w := buf[:rows*d.in]
		widenInto(w, d.w[r0*d.in:(r0+rows)*d.in])
		f(w, r0, rows)
	}
}
