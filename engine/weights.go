package engine

import "github.com/tandemrl/tandem/engine/kernels"

// frozen is a base weight matrix (out×in, row-major) as the kernels read it:
// never written through this view. It is the seam for the storage types of
// the frozen base: [dense] holds []T, [dense16] a 16-bit format (a model's
// [Matrices16], bfloat16 or IEEE half); nothing above [linear] depends on
// which. Full-parameter training, which writes the weights, keeps dense []T.
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

// format16 is what the frozen view needs of a 16-bit element type W: its
// name in messages, the product with a float32 A (kernels.Par.SgemmBF16 or
// kernels.Par.SgemmF16, same contract), the widening to float32 and the
// rounding from it.
type format16[W Float16] struct {
	name  string
	gemm  func(p kernels.Par, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []W, ldb int, beta float32, c []float32, ldc int)
	widen func(dst []float32, src []W)
	round func(float32) W
}

var (
	formatBF16 = &format16[kernels.BF16]{name: "bfloat16", gemm: kernels.Par.SgemmBF16, widen: kernels.WidenBF16, round: kernels.ToBF16}
	formatF16  = &format16[kernels.F16]{name: "float16", gemm: kernels.Par.SgemmF16, widen: kernels.WidenF16, round: kernels.ToF16}
	// formatBF16RoundA is bfloat16 with the activations rounded
	// (Matrices16.RoundActivations).
	formatBF16RoundA = &format16[kernels.BF16]{name: "bfloat16", gemm: kernels.Par.SgemmBF16RoundA, widen: kernels.WidenBF16, round: kernels.ToBF16}
)

// format returns W's format16.
func format[W Float16]() *format16[W] {
	if f, ok := any(formatBF16).(*format16[W]); ok {
		return f
	}
	return any(formatF16).(*format16[W])
}

// dense16 is a frozen matrix stored in a 16-bit format W. Its products run
// on the format's kernel (kernels.Par.SgemmBF16 or SgemmF16) for float32;
// for float64 (reference computations) it widens the weights a block of
// rows at a time.
type dense16[T Float, W Float16] struct {
	w       []W
	out, in int
	f       *format16[W]
}

func newDense16[T Float, W Float16](w []W, out, in int) dense16[T, W] {
	return dense16[T, W]{w: w, out: out, in: in, f: format[W]()}
}

func (d dense16[T, W]) mulT(p par, n int, x []T, beta T, y []T) {
	if n == 0 {
		return
	}
	if xs, ok := any(x).([]float32); ok {
		d.f.gemm(kernels.Par{Threads: p.threads}, true, n, d.out, d.in, 1, xs, d.in, d.w, d.in, float32(beta), any(y).([]float32), d.out)
		return
	}
	d.widened(func(w []T, r0, rows int) {
		gemm(p, false, true, n, rows, d.in, 1, x, d.in, w, d.in, beta, y[r0:], d.out)
	})
}

func (d dense16[T, W]) mul(p par, n int, dy []T, beta T, dx []T) {
	if n == 0 {
		return
	}
	if ys, ok := any(dy).([]float32); ok {
		d.f.gemm(kernels.Par{Threads: p.threads}, false, n, d.in, d.out, 1, ys, d.out, d.w, d.in, float32(beta), any(dx).([]float32), d.in)
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

func (d dense16[T, W]) row(i int, dst []T) { widenInto(dst[:d.in], d.w[i*d.in:(i+1)*d.in]) }

// widened calls f on blocks of at most 256 rows of the matrix widened to
// T, with the first row's index and the block's rows.
func (d dense16[T, W]) widened(f func(w []T, r0, rows int)) {
	const block = 256
	buf := make([]T, min(block, d.out)*d.in)
	for r0 := 0; r0 < d.out; r0 += block {
		rows := min(block, d.out-r0)
		w := buf[:rows*d.in]
		widenInto(w, d.w[r0*d.in:(r0+rows)*d.in])
		f(w, r0, rows)
	}
}

// widenInto sets dst[i] to src[i] widened (exactly): through the format's
// kernel for float32, element by element otherwise.
func widenInto[T Float, W Float16](dst []T, src []W) {
	if d, ok := any(dst).([]float32); ok {
		format[W]().widen(d, src)
		return
	}
	for i, w := range src {
		dst[i] = T(w.Float32())
	}
}
