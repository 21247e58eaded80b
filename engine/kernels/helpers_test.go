package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// shape is one GEMM problem: transposes, sizes, and the padding added to
// each row stride beyond the row length.
type shape struct {
	tA, tB           bool
	m, n, k          int
	padA, padB, padC int
}

// operands holds a GEMM problem's inputs: A, B and C stored with their row
// strides, the padding between rows filled with NaN so that reading it
// poisons the result.
type operands[T float] struct {
	s             shape
	a, b, c       []T
	lda, ldb, ldc int
}

func newOperands[T float](rng *rand.Rand, s shape) operands[T] {
	rowsA, colsA := s.m, s.k
	if s.tA {
		rowsA, colsA = s.k, s.m
	}
	rowsB, colsB := s.k, s.n
	if s.tB {
		rowsB, colsB = s.n, s.k
	}
	o := operands[T]{s: s, lda: max(1, colsA) + s.padA, ldb: max(1, colsB) + s.padB, ldc: max(1, s.n) + s.padC}
	o.a = randMatrix[T](rng, rowsA, colsA, o.lda)
	o.b = randMatrix[T](rng, rowsB, colsB, o.ldb)
	o.c = randMatrix[T](rng, s.m, s.n, o.ldc)
	return o
}

// randMatrix returns a rows×cols matrix with row stride ld, uniform in
// [-1, 1), NaN in the padding.
func randMatrix[T float](rng *rand.Rand, rows, cols, ld int) []T {
	x := make([]T, max(0, (rows-1)*ld+cols))
	for i := range x {
		if i%ld < cols {
			x[i] = T(2*rng.Float64() - 1)
		} else {
			x[i] = T(math.NaN())
		}
	}
	return x
}

func (o operands[T]) opA(i, p int) float64 {
	if o.s.tA {
		return float64(o.a[p*o.lda+i])
	}
	return float64(o.a[i*o.lda+p])
}

func (o operands[T]) opB(p, j int) float64 {
	if o.s.tB {
		return float64(o.b[j*o.ldb+p])
	}
	return float64(o.b[p*o.ldb+j])
}

// reference returns alpha·op(A)·op(B) + beta·C in float64 (dense m×n), and,
// per element, the magnitude |alpha|·Σ|a||b| + |beta·c| that bounds its
// rounding error.
func (o operands[T]) reference(alpha, beta T) (want, scale []float64) {
	m, n, k := o.s.m, o.s.n, o.s.k
	opA := make([]float64, m*k)
	for i := range m {
		for p := range k {
			opA[i*k+p] = o.opA(i, p)
		}
	}
	opB := make([]float64, k*n)
	for p := range k {
		for j := range n {
			opB[p*n+j] = o.opB(p, j)
		}
	}
	want = make([]float64, m*n)
	scale = make([]float64, m*n)
	for i := range m {
		sum, abs := want[i*n:(i+1)*n], scale[i*n:(i+1)*n]
		for p := range k {
			x := opA[i*k+p]
			row := opB[p*n : (p+1)*n]
			for j, y := range row {
				sum[j] += x * y
				abs[j] += absf(x * y)
			}
		}
		for j := range n {
			sum[j] *= float64(alpha)
			abs[j] *= math.Abs(float64(alpha))
			if beta != 0 {
				c := float64(beta) * float64(o.c[i*o.ldc+j])
				sum[j] += c
				abs[j] += math.Abs(c)
			}
		}
	}
	return want, scale
}

// absf is |x| without math.Abs, whose unsafe bit casts the race detector's
// pointer checks make slow in the reference's inner loop.
func absf(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// unitRoundoff is the unit roundoff of T: 2⁻²⁴ for float32, 2⁻⁵³ for float64.
func unitRoundoff[T float]() float64 {
	var z T
	if _, ok := any(z).(float32); ok {
		return 0x1p-24
	}
	return 0x1p-53
}

// requireClose checks got (C after the call) against the reference within the
// classical bound for a length-k sum, γ ≈ (k+2)·u of the absolute magnitude,
// and checks that the padding of C was left alone.
func requireClose[T float](t *testing.T, impl string, o operands[T], got []T, want, scale []float64) {
	t.Helper()
	m, n, k := o.s.m, o.s.n, o.s.k
	tol := 2 * float64(k+2) * unitRoundoff[T]()
	for i := range m {
		for j := range n {
			g := float64(got[i*o.ldc+j])
			w := want[i*n+j]
			bound := tol*scale[i*n+j] + 1e-300
			if !(math.Abs(g-w) <= bound) {
				require.Failf(t, "element differs", "%s %+v: C[%d,%d] = %g, want %g (bound %g)", impl, o.s, i, j, g, w, bound)
			}
		}
		for j := n; j < o.ldc && i*o.ldc+j < len(got); j++ {
			require.True(t, math.IsNaN(float64(got[i*o.ldc+j])), "%s %+v: padding C[%d,%d] was written", impl, o.s, i, j)
		}
	}
}
