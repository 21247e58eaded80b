package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// f16Value is the value of the half with bits h by the definition of
// binary16, in float64: (-1)^s · 2^(e-15) · 1.m, or 2^-14 · 0.m for e = 0.
func f16Value(h uint16) float64 {
	s, e, m := h>>15, int(h>>10&0x1f), float64(h&0x3ff)
	v := math.Ldexp(1+m/1024, e-15)
	if e == 0 {
		v = math.Ldexp(m/1024, -14)
	}
	if s != 0 {
		v = -v
	}
	return v
}

// TestF16Conversions checks all 65,536 halves: Float32 and WidenF16 (F16C
// on amd64, the Go loop elsewhere) against the definition, bit for bit,
// NaNs coming back quiet; ToF16 back to the same half for every non-NaN;
// and ToF16 on random float32s, across the half range and beyond it,
// against the nearest half found by search, ties to even.
func TestF16Conversions(t *testing.T) {
	t.Parallel()
	all := make([]F16, 1<<16)
	for i := range all {
		all[i] = F16(i)
	}
	widened := make([]float32, len(all)+5) // a tail past the vector loop
	WidenF16(widened[:len(all)], all)
	WidenF16(widened[len(all):], all[:5])
	for i, h := range all {
		got := h.Float32()
		require.Equal(t, math.Float32bits(got), math.Float32bits(widened[i]), "half %#04x: Float32 and WidenF16", i)
		if h&0x7c00 == 0x7c00 {
			require.False(t, h.IsFinite(), "half %#04x", i)
			if h&0x3ff != 0 {
				require.True(t, got != got, "half %#04x is a NaN", i)
				require.NotZero(t, math.Float32bits(got)&0x400000, "half %#04x: a quiet NaN", i)
				require.Equal(t, uint32(h>>15), math.Float32bits(got)>>31, "half %#04x: the sign", i)
				continue
			}
			require.True(t, math.IsInf(float64(got), 1-2*int(h>>15)), "half %#04x is ±Inf", i)
		} else {
			require.True(t, h.IsFinite(), "half %#04x", i)
			require.Equal(t, f16Value(uint16(h)), float64(got), "half %#04x", i)
			require.Equal(t, uint16(h)>>15, uint16(math.Float32bits(got)>>31), "half %#04x: the sign (of zero too)", i)
		}
		require.Equal(t, h, ToF16(got), "half %#04x round trip", i)
	}
	for i := range all[:5] {
		require.Equal(t, math.Float32bits(all[i].Float32()), math.Float32bits(widened[len(all)+i]))
	}

	// Rounding: the nearest of the finite halves (and ±Inf past 65520,
	// where IEEE rounding overflows), ties to the even mantissa.
	finite := []float64{}
	for h := range 0x7c00 {
		finite = append(finite, f16Value(uint16(h))) // 0 … 65504, increasing
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		f := float32(math.Ldexp(rng.Float64(), rng.IntN(48)-30))
		if rng.IntN(8) == 0 { // exactly between two halves
			h := rng.IntN(0x7bff)
			f = float32((finite[h] + finite[h+1]) / 2)
		}
		v := float64(f)
		var want F16
		switch {
		case v >= 65520:
			want = 0x7c00
		default:
			j := len(finite)                            // none >= v: v is in (65504, 65520)
			for lo, hi := 0, len(finite)-1; lo <= hi; { // the first half >= v
				mid := (lo + hi) / 2
				if finite[mid] >= v {
					j, hi = mid, mid-1
				} else {
					lo = mid + 1
				}
			}
			want = F16(min(j, len(finite)-1))
			if j > 0 && j < len(finite) {
				below, above := v-finite[j-1], finite[j]-v
				if below < above || (below == above && (j-1)%2 == 0) {
					want = F16(j - 1)
				}
			}
		}
		require.Equal(t, want, ToF16(f), "ToF16(%g)", f)
		require.Equal(t, want|0x8000, ToF16(-f), "ToF16(%g)", -f)
	}
	require.Equal(t, F16(0x7c00), ToF16(float32(math.Inf(1))))
	require.False(t, ToF16(float32(math.NaN())).IsFinite())
	require.True(t, ToF16(float32(math.NaN())).Float32() != ToF16(float32(math.NaN())).Float32())
}

// TestSgemm16IsSgemmOnWidenedWeights checks that SgemmF16, and SgemmBF16
// but for AMX's routes, compute bit for bit what Sgemm computes on B
// widened, over shapes that take every route (the sampling step's dot
// tiles and single row, the packed tiles, B in place, narrow products) and
// block boundaries with tails merged or not, for several thread counts,
// alpha and beta, and padded strides.
func TestSgemm16IsSgemmOnWidenedWeights(t *testing.T) {
	t.Parallel()
	t.Run("F16", func(t *testing.T) {
		t.Parallel()
		checkSgemmOnWidened(t, ToF16, WidenF16, Par.SgemmF16, func(bool, int, int) bool { return true })
	})
	t.Run("BF16", func(t *testing.T) {
		t.Parallel()
		// AMX multiplies A split in two bfloat16 parts (its own tests
		// hold it to float64 arithmetic); it leaves the sampling step's
		// products of a depth that is not a multiple of 32.
		widened := func(transB bool, m, k int) bool {
			return amx == nil || transB && m <= bf16DotRows && k%amxKS != 0
		}
		checkSgemmOnWidened(t, ToBF16, WidenBF16, Par.SgemmBF16, widened)
	})
}

// checkSgemmOnWidened is TestSgemm16IsSgemmOnWidenedWeights for weights of
// type W, round and widen converting them, over the shapes widened takes.
func checkSgemmOnWidened[W F16 | BF16](t *testing.T, round func(float32) W, widen func([]float32, []W),
	gemm func(p Par, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []W, ldb int, beta float32, c []float32, ldc int),
	widened func(transB bool, m, k int) bool) {
	rng := rand.New(rand.NewPCG(7, 8))
	type shape struct {
		transB  bool
		m, n, k int
	}
	var shapes []shape
	for _, transB := range []bool{true, false} {
		for _, m := range []int{1, 3, 16, 17, 40, 96, 97} {
			for _, n := range []int{1, 9, 16, 17, 70, 100, 272, 300, 530} {
				for _, k := range []int{1, 37, 50, 260} {
					if m*n*k > 2_000_000 || !widened(transB, m, k) {
						continue
					}
					shapes = append(shapes, shape{transB, m, n, k})
				}
			}
		}
	}
	for _, s := range shapes {
		lda, ldc := s.k+3, s.n+1
		rows, cols := s.k, s.n
		if s.transB {
			rows, cols = s.n, s.k
		}
		ldb := cols + 2
		a := randMatrix[float32](rng, s.m, s.k, lda)
		b16 := make([]W, (rows-1)*ldb+cols)
		for i := range b16 {
			b16[i] = round(float32(rng.NormFloat64()))
		}
		b32 := make([]float32, len(b16))
		widen(b32, b16)
		c0 := randMatrix[float32](rng, s.m, s.n, ldc)
		for _, ab := range [][2]float32{{1, 0}, {0.5, -1.25}} {
			want := append([]float32(nil), c0...)
			Par{Threads: 2}.Sgemm(false, s.transB, s.m, s.n, s.k, ab[0], a, lda, b32, ldb, ab[1], want, ldc)
			for _, threads := range []int{1, 2, 3, 8} {
				got := append([]float32(nil), c0...)
				gemm(Par{Threads: threads}, s.transB, s.m, s.n, s.k, ab[0], a, lda, b16, ldb, ab[1], got, ldc)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
						t.Fatalf("%+v alpha %g beta %g threads %d: element %d is %g, Sgemm on widened B gives %g", s, ab[0], ab[1], threads, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestWidenGemmBlocksAreSgemm runs widenGemm with small blocks, so that
// products of test size cross several column blocks (op(B) = Bᵀ) and
// depth blocks (op(B) = B, each added to C after the first), and checks
// the result is Sgemm's on B widened, bit for bit.
func TestWidenGemmBlocksAreSgemm(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, transB := range []bool{true, false} {
		for _, s := range [][3]int{{40, 100, 600}, {17, 290, 513}, {64, 33, 1030}, {20, 16, 700}} {
			m, n, k := s[0], s[1], s[2]
			rows, cols := k, n
			if transB {
				rows, cols = n, k
			}
			ldb := cols + 1
			a := randMatrix[float32](rng, m, k, k)
			b16 := make([]F16, (rows-1)*ldb+cols)
			for i := range b16 {
				b16[i] = ToF16(float32(rng.NormFloat64()))
			}
			b32 := make([]float32, len(b16))
			WidenF16(b32, b16)
			for _, beta := range []float32{0, 0.5} {
				c0 := randMatrix[float32](rng, m, n, n)
				want := append([]float32(nil), c0...)
				Par{Threads: 2}.Sgemm(false, transB, m, n, k, 0.75, a, k, b32, ldb, beta, want, n)
				for _, elems := range []int{1, 5000, 1 << 20} {
					got := append([]float32(nil), c0...)
					widenGemmBlocks(Par{Threads: 3}, WidenF16, elems, transB, m, n, k, 0.75, a, k, b16, ldb, beta, got, n)
					for i := range got {
						require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "transB=%t %d×%d×%d beta %g blocks of %d: element %d", transB, m, n, k, beta, elems, i)
					}
				}
			}
		}
	}
}

// TestWideDotRoutesAreTheirDotRoutes runs every 16-bit dot route this CPU
// has (the AVX-512 and the AVX2 twins, whichever Sgemm runs) directly
// against its implementation's float32 dot route on B widened, bit for
// bit: tile edges in both directions, depths around the kernels' groups of
// 8 and 16, one row (the 1×8 kernel) and several, beta zero or not.
func TestWideDotRoutesAreTheirDotRoutes(t *testing.T) {
	t.Parallel()
	t.Run("F16", func(t *testing.T) {
		t.Parallel()
		checkWideDots(t, f16Dots, ToF16, WidenF16)
	})
	t.Run("BF16", func(t *testing.T) {
		t.Parallel()
		checkWideDots(t, bf16Dots, ToBF16, WidenBF16)
	})
}

func checkWideDots[W F16 | BF16](t *testing.T, routes []wideRoute[W], round func(float32) W, widen func([]float32, []W)) {
	if len(routes) == 0 {
		t.Skip("no 16-bit dot route on this CPU")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, r := range routes {
		for _, m := range []int{1, 2, 3, 5, 8, r.d.maxRows} {
			for _, n := range []int{4, 8, 13, 40} {
				for _, k := range []int{1, 7, 8, 9, 16, 17, 33, 100} {
					lda, ldb, ldc := k+1, k+3, n+2
					a := randMatrix[float32](rng, m, k, lda)
					b16 := make([]W, (n-1)*ldb+k)
					for i := range b16 {
						b16[i] = round(float32(rng.NormFloat64()))
					}
					b32 := make([]float32, len(b16))
					widen(b32, b16)
					c0 := randMatrix[float32](rng, m, n, ldc)
					for _, beta := range []float32{0, 0.75} {
						want := append([]float32(nil), c0...)
						dotGemm(r.im, r.im.dot, Par{Threads: 1}, m, n, k, 1.25, a, lda, b32, ldb, beta, want, ldc)
						got := append([]float32(nil), c0...)
						dotGemm(r.im, r.d, Par{Threads: 2}, m, n, k, 1.25, a, lda, b16, ldb, beta, got, ldc)
						for i := range got {
							require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]),
								"%s route of %s, %d×%d×%d beta %g: element %d", r.name, r.im.name, m, n, k, beta, i)
						}
					}
				}
			}
		}
	}
}
