package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refBF16 rounds f to bfloat16 through float64 arithmetic: the two
// neighbours of f with 8 significant bits, the nearer one, ties to the one
// whose last bit is even.
func refBF16(f float32) BF16 {
	if f != f {
		return BF16(math.Float32bits(f)>>16 | 0x40)
	}
	bits := math.Float32bits(f)
	lo := BF16(bits >> 16)
	hi := lo + 1
	if bits&0xffff == 0 {
		return lo
	}
	dl := math.Abs(float64(f) - float64(lo.Float32()))
	dh := math.Abs(float64(hi.Float32()) - float64(f))
	if hi&0x7fff == 0x7f80 { // hi is infinite: compare with 2^128
		dh = math.Abs(math.Ldexp(1, 128) - math.Abs(float64(f)))
	}
	switch {
	case dl < dh:
		return lo
	case dh < dl:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

func TestToBF16(t *testing.T) {
	t.Parallel()
	cases := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1.00390625 /* tie, even below */, 1.01171875, /* tie, odd below */
		math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, 3.3895314e38}
	for _, f := range cases {
		assert.Equal(t, refBF16(f), ToBF16(f), "%g (%#x)", f, math.Float32bits(f))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float32frombits(rng.Uint32())
		got := ToBF16(f)
		if f != f {
			require.True(t, got.Float32() != got.Float32(), "NaN %#x stays NaN", math.Float32bits(f))
			require.Equal(t, math.Float32bits(f)>>31, uint32(got)>>15, "NaN keeps its sign")
			continue
		}
		require.Equal(t, refBF16(f), got, "%g (%#x)", f, math.Float32bits(f))
	}
	assert.Equal(t, float32(1.5), ToBF16(1.5).Float32())
}

// bf16Operands draws A (m×k, float32, NaN padding) and B (bfloat16,
// stored n×k with transB, else k×n) with normal entries.
func bf16Operands(rng *rand.Rand, transB bool, m, n, k, pad int) (a []float32, lda int, b []BF16, ldb int) {
	lda = k + pad
	a = make([]float32, max(0, (m-1)*lda+k))
	for i := range a {
		if i%lda < k {
			a[i] = float32(rng.NormFloat64())
		} else {
			a[i] = float32(math.NaN())
		}
	}
	rows, cols := k, n
	if transB {
		rows, cols = n, k
	}
	ldb = cols + pad
	b = make([]BF16, max(0, (rows-1)*ldb+cols))
	for i := range b {
		if i%ldb < cols {
			b[i] = ToBF16(float32(rng.NormFloat64()))
		} else {
			b[i] = ToBF16(float32(math.NaN()))
		}
	}
	return a, lda, b, ldb
}

// refSgemmBF16 is C = alpha·A·op(B) + beta·C in float64, with A rounded to
// bfloat16 when roundA, and the same sum over absolute values (the scale
// of the rounding errors).
func refSgemmBF16(transB, roundA bool, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) (out, abs []float64) {
	out, abs = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				x := a[i*lda+p]
				if roundA {
					x = ToBF16(x).Float32()
				}
				var y BF16
				if transB {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				s += float64(x) * float64(y.Float32())
				abs[i*n+j] += math.Abs(float64(x) * float64(y.Float32()))
			}
			out[i*n+j] = float64(alpha) * s
			abs[i*n+j] *= math.Abs(float64(alpha))
			if beta != 0 {
				out[i*n+j] += float64(beta) * float64(c[i*ldc+j])
				abs[i*n+j] += math.Abs(float64(beta) * float64(c[i*ldc+j]))
			}
		}
	}
	return out, abs
}

// bf16Modes are SgemmBF16 and SgemmBF16RoundA.
var bf16Modes = []struct {
	name   string
	roundA bool
	gemm   func(p Par, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int)
}{
	{"SgemmBF16", false, Par.SgemmBF16},
	{"SgemmBF16RoundA", true, Par.SgemmBF16RoundA},
}

// rounded is A's row as SgemmBF16RoundA's kernels see it.
func rounded(row []float32) []BF16 {
	r := make([]BF16, len(row))
	RoundBF16(r, row)
	return r
}

// step is one pair of depth steps of an element: VDPBF16PS of the pair
// (a zero past the end).
func step(acc float32, a, b []BF16, i int) float32 {
	pad := func(x []BF16, i int) BF16 {
		if i < len(x) {
			return x[i]
		}
		return 0
	}
	return dpbf16(acc, pad(a, i), pad(a, i+1), pad(b, i), pad(b, i+1))
}

// emulateDot is the dot route's value of one element in Go: 16 lanes, lane
// l summing the steps over the pairs (32g+2l, 32g+2l+1) of every group g in
// order, then the kernel's reduction: lanes l and l+8 added, then
// ((y0+y1)+(y2+y3)) + ((y4+y5)+(y6+y7)), then times alpha.
func emulateDot(a, b []BF16, alpha float32) float32 {
	var lanes [16]float32
	for g := 0; g < len(a); g += 32 {
		for l := range 16 {
			lanes[l] = step(lanes[l], a, b, g+2*l)
		}
	}
	var y [8]float32
	for l := range 8 {
		y[l] = lanes[l] + lanes[l+8]
	}
	s := ((y[0] + y[1]) + (y[2] + y[3])) + ((y[4] + y[5]) + (y[6] + y[7]))
	return alpha * s
}

// TestBF16DotRouteIsVDPBF16PS: with beta = 0, every element of
// SgemmBF16RoundA's dot route equals the Go emulation of VDPBF16PS bit for
// bit (odd pair element first, products exact, sums rounded), for depths
// around the 32-element groups and odd ones.
func TestBF16DotRouteIsVDPBF16PS(t *testing.T) {
	if bf16Round == nil {
		t.Skip("no AVX512_BF16 on this CPU (or TANDEM_KERNELS asks for another implementation)")
	}
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 2, 3, 31, 32, 33, 63, 64, 65, 100, 1024, 1031} {
		for _, m := range []int{1, 3, 4, 7, 16} {
			n := 1 + rng.IntN(13)
			a, lda, b, ldb := bf16Operands(rng, true, m, n, k, 3)
			c := make([]float32, m*n)
			bf16DotGemm(Par{}, bf16Round, m, n, k, 1.5, a, lda, b, ldb, 0, c, n) // also where SgemmBF16RoundA runs AMX
			for i := range m {
				ar := rounded(a[i*lda:][:k])
				for j := range n {
					want := emulateDot(ar, b[j*ldb:][:k], 1.5)
					require.Equal(t, math.Float32bits(want), math.Float32bits(c[i*n+j]), "k=%d m=%d (%d,%d): %g vs %g", k, m, i, j, c[i*n+j], want)
				}
			}
		}
	}
}

// TestSgemmBF16AgainstReference: both arithmetics, both routes and both
// layouts against float64 arithmetic on the same inputs (A rounded to
// bfloat16 for SgemmBF16RoundA on avx512bf16, as it defines), with alpha and beta, NaN in every
// padding and in C where beta = 0.
func TestSgemmBF16AgainstReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := []struct {
		transB  bool
		m, n, k int
	}{
		{true, 1, 1, 1}, {true, 1, 300, 77}, {true, 4, 33, 64}, {true, 16, 70, 129}, {true, 17, 40, 50},
		{true, 64, 300, 96}, {false, 1, 50, 30}, {false, 9, 257, 65}, {false, 40, 300, 33},
	}
	for _, mode := range bf16Modes {
		for _, s := range shapes {
			for _, ab := range [][2]float32{{1, 0}, {-0.5, 1}, {2, 0.25}} {
				alpha, beta := ab[0], ab[1]
				a, lda, b, ldb := bf16Operands(rng, s.transB, s.m, s.n, s.k, 2)
				ldc := s.n + 1
				c := make([]float32, s.m*ldc)
				for i := range c {
					c[i] = float32(rng.NormFloat64())
					if beta == 0 || i%ldc == s.n {
						c[i] = float32(math.NaN())
					}
				}
				roundA := mode.roundA && BF16RoundsA()
				want, abs := refSgemmBF16(s.transB, roundA, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc)
				mode.gemm(Par{Threads: 2}, s.transB, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc)
				for i := range s.m {
					for j := range s.n {
						// AMX's split holds A to 2⁻¹⁸ relative, float32
						// sums lose 2⁻²⁴ of their running size per step:
						// both are within 2⁻¹⁶ of the sum of absolute
						// terms here.
						w, tol := want[i*s.n+j], math.Ldexp(abs[i*s.n+j], -16)
						require.InDelta(t, w, float64(c[i*ldc+j]), tol, "%s %+v alpha %g beta %g (%d,%d)", mode.name, s, alpha, beta, i, j)
					}
					require.True(t, math.IsNaN(float64(c[i*ldc+s.n])), "the padding of C is not written")
				}
			}
		}
	}
}

// TestSgemmBF16DeterministicAndRowInvariant: the result is bit-identical
// for any thread count, and on the dot route a row's values do not depend
// on the other rows computed with it (continuous batching relies on it).
func TestSgemmBF16DeterministicAndRowInvariant(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range []struct {
		transB  bool
		m, n, k int
	}{{true, 1, 3000, 1024}, {true, 13, 1500, 512}, {true, 100, 700, 300}, {false, 50, 900, 257}} {
		for _, mode := range bf16Modes {
			a, lda, b, ldb := bf16Operands(rng, s.transB, s.m, s.n, s.k, 0)
			var first []float32
			for _, th := range []int{1, 2, 3, 8} {
				c := make([]float32, s.m*s.n)
				mode.gemm(Par{Threads: th}, s.transB, s.m, s.n, s.k, 1, a, lda, b, ldb, 0, c, s.n)
				if first == nil {
					first = c
					continue
				}
				require.Equal(t, first, c, "%s %+v: threads %d differ from threads 1", mode.name, s, th)
			}
			if !s.transB || s.m > bf16DotRows {
				continue
			}
			for i := range s.m {
				one := make([]float32, s.n)
				mode.gemm(Par{}, true, 1, s.n, s.k, 1, a[i*lda:], lda, b, ldb, 0, one, s.n)
				require.Equal(t, first[i*s.n:(i+1)*s.n], one, "%s %+v: row %d alone differs from row %d among %d", mode.name, s, i, i, s.m)
			}
		}
	}
}

func TestSgemmBF16Panics(t *testing.T) {
	t.Parallel()
	a := make([]float32, 6)
	b := make([]BF16, 6)
	c := make([]float32, 4)
	assert.PanicsWithValue(t, "kernels: SgemmBF16: m = -1, must be >= 0", func() {
		Par{}.SgemmBF16(true, -1, 2, 3, 1, a, 3, b, 3, 0, c, 2)
	})
	assert.Panics(t, func() { Par{}.SgemmBF16(true, 2, 2, 3, 1, a, 3, b[:5], 3, 0, c, 2) }, "B too short")
}

// emulatePacked is the packed route's value of element (i, j) in Go: per
// depth pass of bgKC steps, one lane summing the steps over the pass's
// pairs in order (a zero past k), then C = alpha·s for the first pass
// (beta = 0) and C = alpha·s + C for the later ones.
func emulatePacked(transB bool, i, j, k int, alpha float32, a []float32, lda int, b []BF16, ldb int) float32 {
	ar := rounded(a[i*lda:][:k])
	col := make([]BF16, k)
	for p := range k {
		if transB {
			col[p] = b[j*ldb+p]
		} else {
			col[p] = b[p*ldb+j]
		}
	}
	var c float32
	for pc := 0; pc < k; pc += bgKC {
		end := min(pc+bgKC, k)
		var s float32
		for p := 0; p < end-pc; p += 2 {
			s = step(s, ar[pc:end], col[pc:end], p)
		}
		as := float32(alpha * s)
		if pc == 0 {
			c = as
		} else {
			c = as + c
		}
	}
	return c
}

// TestBF16PackedRouteIsVDPBF16PS: every element of SgemmBF16RoundA's
// packed route equals its Go emulation bit for bit, for both layouts, edge
// tiles, odd depths and several depth passes.
func TestBF16PackedRouteIsVDPBF16PS(t *testing.T) {
	if bf16Round == nil {
		t.Skip("no AVX512_BF16 on this CPU (or TANDEM_KERNELS asks for another implementation)")
	}
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, s := range []struct {
		transB  bool
		m, n, k int
	}{{true, 17, 33, 1}, {true, 24, 64, 256}, {true, 30, 70, 257}, {true, 19, 31, 600}, {false, 12, 32, 2}, {false, 5, 40, 513}, {false, 40, 65, 255}, {false, 14, 33, 1201}} {
		a, lda, b, ldb := bf16Operands(rng, s.transB, s.m, s.n, s.k, 1)
		c := make([]float32, s.m*s.n)
		bf16PackedGemm(Par{Threads: 2}, bf16Round, s.transB, s.m, s.n, s.k, 0.75, a, lda, b, ldb, 0, c, s.n) // also where SgemmBF16RoundA runs AMX
		for i := range s.m {
			for j := range s.n {
				want := emulatePacked(s.transB, i, j, s.k, 0.75, a, lda, b, ldb)
				require.Equal(t, math.Float32bits(want), math.Float32bits(c[i*s.n+j]), "%+v (%d,%d): %g vs %g", s, i, j, c[i*s.n+j], want)
			}
		}
	}
}
