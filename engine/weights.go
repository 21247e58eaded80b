package engine

// frozen is a base weight matrix (out×in, row-major) as the kernels read it:
// never written through this view. It is the seam for other storage types
// of the frozen base: today's one implementation, [dense], holds []T; a
// bfloat16 store (16-bit weights, float32 arithmetic) would implement the
// same three operations, widening while the kernels pack their panels, and
// nothing above [linear] would change. Full-parameter training, which
// writes the weights, keeps dense []T.
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
