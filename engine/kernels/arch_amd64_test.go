//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/cpu"
)

// TestImplementationSelection checks that init picked the widest kernels the
// CPU runs, or the ones TANDEM_KERNELS asked for.
func TestImplementationSelection(t *testing.T) {
	t.Parallel()
	want := goSgemm.name
	switch env := os.Getenv(EnvKernels); {
	case env == "purego" || !hasAVX2:
	case hasAVX512 && env != "avx2":
		want = avx512SgemmImpl.name
	default:
		want = avx2SgemmImpl.name
	}
	assert.Equal(t, want, Implementation())
	t.Logf("kernels in use: %s (AVX2+FMA %t, AVX-512F %t)", Implementation(), hasAVX2, hasAVX512)

	// SgemmF16's sampling step reads half-precision weights in place where
	// the CPU converts halves (F16C): by the AVX2 kernels' twins, or the
	// AVX-512 kernels' where those run and the CPU masks 16-bit loads
	// (AVX512BW, AVX512VL).
	wide := "widen"
	switch {
	case want == avx512SgemmImpl.name && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL:
		wide = "avx512"
	case want == avx2SgemmImpl.name:
		wide = "avx2"
	}
	wantF16 := wide
	if !cpu.X86.HasF16C {
		wantF16 = "widen"
	}
	assert.Equal(t, wantF16, F16Implementation())

	// SgemmBF16 runs on AMX where the tile unit is there and permitted,
	// else its sampling step reads bfloat16 weights in place as
	// SgemmF16's does (widening a bfloat16 needs no F16C).
	wantBF16 := wide
	if amx != nil {
		wantBF16 = "amx"
	}
	assert.Equal(t, wantBF16, BF16Implementation())
}

// TestMicroKernelsSumInOrder holds every assembly micro-kernel to its
// contract, bit for bit: each element of the tile is the FMA chain over
// p = 0, 1, …, k-1, then alpha·sum + beta·C (C not read when beta == 0), for
// depths on both sides of the kernels' loop segments (12 steps and 24) and of
// a depth pass, with and without a next block to prefetch.
func TestMicroKernelsSumInOrder(t *testing.T) {
	t.Parallel()
	ks := []int{255, 256, 257}
	for k := 1; k <= 30; k++ {
		ks = append(ks, k)
	}
	for _, im := range asmSgemmImpls() {
		testKernelSumsInOrder(t, im.name, im.mr, im.nr, ks, im.kernel, func(a, b, c float32) float32 {
			// a·b is exact in float64, so this is the float32 FMA except
			// where rounding to float64 and then to float32 differs from
			// rounding once; the operands are fixed, and none of their sums
			// is such a case (the test would fail on every run, not by
			// chance).
			return float32(math.FMA(float64(a), float64(b), float64(c)))
		})
	}
	for _, im := range asmDgemmImpls() {
		testKernelSumsInOrder(t, im.name, im.mr, im.nr, ks, im.kernel, math.FMA)
	}
}

func testKernelSumsInOrder[T float](t *testing.T, name string, mr, nr int, ks []int, kernel microKernel[T], fma func(a, b, c T) T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const ldc = 40 // wider than any tile: columns past nr must stay untouched
	for _, k := range ks {
		a := make([]T, mr*k)
		b := make([]T, k*nr)
		for i := range a {
			a[i] = T(rng.Float64()*2 - 1)
		}
		for i := range b {
			b[i] = T(rng.Float64()*2 - 1)
		}
		for _, beta := range []T{0, 0.75} {
			c := make([]T, mr*ldc)
			for i := range c {
				c[i] = T(rng.Float64())
			}
			if beta == 0 {
				for i := 0; i < mr; i++ {
					c[i*ldc] = T(math.NaN()) // not read
				}
			}
			want := slices.Clone(c)
			const alpha = 1.5
			for i := range mr {
				for j := range nr {
					var sum T
					for p := range k {
						sum = fma(a[p*mr+i], b[p*nr+j], sum)
					}
					v := alpha * sum
					if beta != 0 {
						v = fma(beta, c[i*ldc+j], v)
					}
					want[i*ldc+j] = v
				}
			}
			// With and without memory to ask into cache (next), which must
			// change nothing.
			next := make([]T, 64*k)
			for _, next := range [][]T{nil, next} {
				got := slices.Clone(c)
				kernel(k, a, 1, mr, b, nr, got, ldc, alpha, beta, next)
				if !slices.Equal(want, got) {
					t.Fatalf("%s, k = %d, beta = %v, next %t: the tile is not the in-order FMA sum", name, k, beta, next != nil)
				}
			}
		}
	}
}
