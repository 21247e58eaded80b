package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// FuzzSgemm checks every implementation against the float64 reference on
// shapes, strides and scalars chosen by the fuzzer:
// go test -run - -fuzz FuzzSgemm ./engine/kernels.
func FuzzSgemm(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(0), uint8(0), uint64(1))
	f.Add(uint8(13), uint8(33), uint8(7), uint8(3), uint8(0x5a), uint64(2))
	f.Add(uint8(8), uint8(70), uint8(65), uint8(2), uint8(0x11), uint64(3))
	f.Add(uint8(50), uint8(9), uint8(200), uint8(1), uint8(0xf0), uint64(4))
	f.Fuzz(func(t *testing.T, m, n, k, trans, pads uint8, seed uint64) {
		s := shape{
			tA: trans&1 != 0, tB: trans&2 != 0,
			m: int(m % 61), n: int(n % 97), k: int(k),
			padA: int(pads & 3), padB: int(pads >> 2 & 3), padC: int(pads >> 4 & 3),
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		o := newOperands[float32](rng, s)
		ab := alphaBetas[int(seed%uint64(len(alphaBetas)))]
		alpha, beta := float32(ab[0]), float32(ab[1])
		want, scale := o.reference(alpha, beta)
		for _, im := range sgemmImpls() {
			got := slices.Clone(o.c)
			if s.m > 0 && s.n > 0 && beta == 0 {
				got[0] = float32(math.NaN()) // must be ignored
			}
			gemm(im, Par{Threads: int(seed % 4)}, s.tA, s.tB, s.m, s.n, s.k, alpha, o.a, o.lda, o.b, o.ldb, beta, got, o.ldc)
			requireClose(t, im.name, o, got, want, scale)
		}
	})
}
