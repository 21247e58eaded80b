//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExpAVX2IsExpF64 holds the AVX2 exponential (which also runs where
// AVX-512 does not) to expF64 bit for bit on every CPU with AVX2: each
// element written back and each lane's sum, over arguments across the
// whole range, the ones whose exponentials are subnormal or overflow (where
// it scales in two steps and AVX-512 in one) and the specials.
func TestExpAVX2IsExpF64(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	const n = 1024
	x := make([]float32, n)
	for j := range x {
		switch j % 8 {
		case 0:
			x[j] = float32(-700 - rng.Float64()*60) // subnormal exponentials, then 0
		case 1:
			x[j] = float32(700 + rng.Float64()*15) // near and past overflow
		case 2:
			x[j] = float32(rng.NormFloat64() * 20)
		case 3:
			x[j] = float32((rng.Float64() - 0.5) * 2100) // past the clamp
		default:
			x[j] = float32(rng.NormFloat64() * 3)
		}
		if rng.IntN(30) == 0 {
			x[j] = [4]float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -1e30}[rng.IntN(4)]
		}
	}
	for _, shift := range []float64{0, 3.5, -2.25} {
		for _, mul := range []float64{1, -0.75} {
			got := append([]float32(nil), x...)
			var lanes [expLanes]float64
			expShiftAVX2(&got[0], n, shift, mul, true, &lanes, &expConsts4[0][0])
			var want [expLanes]float64
			for j, v := range x {
				e := expF64(float64(v) - shift)
				want[j%expLanes] += e
				w := float32(mul * e)
				require.True(t, math.Float32bits(w) == math.Float32bits(got[j]) || w != w && got[j] != got[j],
					"shift %g mul %g: exp(%g): %g, want %g", shift, mul, x[j], got[j], w)
			}
			for l := range want {
				require.True(t, math.Float64bits(want[l]) == math.Float64bits(lanes[l]) || want[l] != want[l] && lanes[l] != lanes[l],
					"shift %g: lane %d sums %g, want %g", shift, l, lanes[l], want[l])
			}

			x64 := make([]float64, n)
			for j, v := range x {
				x64[j] = float64(v) * (1 + 1e-12) // not float32 values
			}
			var lanes64, want64 [expLanes]float64
			expSumAVX2F64(&x64[0], n, shift, &lanes64, &expConsts4[0][0])
			for j, v := range x64 {
				want64[j%expLanes] += expF64(v - shift)
			}
			for l := range want64 {
				require.True(t, math.Float64bits(want64[l]) == math.Float64bits(lanes64[l]) || want64[l] != want64[l] && lanes64[l] != lanes64[l],
					"float64, shift %g: lane %d sums %g, want %g", shift, l, lanes64[l], want64[l])
			}
		}
	}
	// Each lane alone, through the subnormal range a step at a time, so
	// that no sum hides an element.
	for v := -760.0; v < -700; v += 0.37 {
		y := [8]float64{v, v + 0.1, v + 0.2, v + 0.3, -v, -v - 0.5, v / 2, v - 300}
		for l, yl := range y {
			var lanes [expLanes]float64
			one := [8]float64{}
			one[l] = yl
			for i := range one {
				if i != l {
					one[i] = math.Inf(-1)
				}
			}
			expSumAVX2F64(&one[0], 8, 0, &lanes, &expConsts4[0][0])
			require.Equal(t, math.Float64bits(expF64(yl)), math.Float64bits(lanes[l]), "exp(%g)", yl)
		}
	}
}
