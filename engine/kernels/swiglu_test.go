package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpfAgainstMathExp(t *testing.T) {
	t.Parallel()
	worst := 0.0
	for x := -87.0; x <= 88.5; x += 0.0137 {
		xf := float32(x)
		want := math.Exp(float64(xf))
		got := float64(expf(xf))
		rel := math.Abs(got-want) / want
		worst = math.Max(worst, rel)
	}
	t.Logf("max relative error %.3g (float32 ulp is %.3g)", worst, math.Pow(2, -23))
	assert.Less(t, worst, 2.5e-7)
	assert.True(t, math.IsInf(float64(expf(100)), 1))
	assert.Zero(t, expf(-100))
	assert.True(t, math.IsNaN(float64(expf(float32(math.NaN())))))
	require.Equal(t, float32(1), expf(0))
}

// TestSwiGLUIsItsGo holds SwiGLU (the assembly where the CPU has it) to
// swiglu32 bit for bit (NaN for NaN), over lengths around the 16-element
// steps, with and without σ, on gates across expf's whole range: past
// both clamps, n = 128 (gates near −88.5), zeros of both signs, infinities
// and NaNs.
func TestSwiGLUIsItsGo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for n := range 70 {
		g, u := make([]float32, n), make([]float32, n)
		for i := range g {
			u[i] = float32(rng.NormFloat64())
			switch rng.IntN(12) {
			case 0:
				g[i] = float32(-88.3 - rng.Float64()*0.6) // n = 128 and the +Inf clamp of expf(−g)
			case 1:
				g[i] = float32(87 + rng.Float64()*0.8) // the 0 clamp
			case 2:
				g[i] = [6]float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e30}[rng.IntN(6)]
			default:
				g[i] = float32(rng.NormFloat64() * 6)
			}
		}
		for _, withSG := range []bool{false, true} {
			wantH, gotH := make([]float32, n), make([]float32, n)
			var wantS, gotS []float32
			if withSG {
				wantS, gotS = make([]float32, n), make([]float32, n)
			}
			swiglu32(g, u, wantH, wantS)
			SwiGLU(g, u, gotH, gotS)
			for i := range gotH {
				require.True(t, same(wantH[i], gotH[i]), "n=%d h[%d] for g=%v: %v, want %v", n, i, g[i], gotH[i], wantH[i])
				if withSG {
					require.True(t, same(wantS[i], gotS[i]), "n=%d σ[%d] for g=%v: %v, want %v", n, i, g[i], gotS[i], wantS[i])
				}
			}
		}
	}
	require.Panics(t, func() { SwiGLU(make([]float32, 2), make([]float32, 2), make([]float32, 3), nil) })
}

func BenchmarkSwiGLU(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	n := 3072
	g, u, h, sg := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i], u[i] = float32(rng.NormFloat64()*3), float32(rng.NormFloat64())
	}
	b.Run("SwiGLU", func(b *testing.B) {
		for b.Loop() {
			SwiGLU(g, u, h, sg)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
	})
	b.Run("swiglu32", func(b *testing.B) {
		for b.Loop() {
			swiglu32(g, u, h, sg)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
	})
}
