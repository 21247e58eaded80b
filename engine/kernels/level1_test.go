package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

var level1Lengths = []int{0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 1027}

// level1Impl is one set of level-1 routines: the ones in use and the
// portable ones.
type level1Impl struct {
	name  string
	sdot  func(x, y []float32) float32
	saxpy func(alpha float32, x, y []float32)
	ddot  func(x, y []float64) float64
	daxpy func(alpha float64, x, y []float64)
}

var level1Impls = []level1Impl{
	{"in use", Sdot, Saxpy, Ddot, Daxpy},
	{"portable", goDot[float32], goAxpy[float32], goDot[float64], goAxpy[float64]},
}

func TestSdotSaxpy(t *testing.T) {
	t.Parallel()
	for _, im := range level1Impls {
		t.Run(im.name, func(t *testing.T) { testSdotSaxpy(t, im.sdot, im.saxpy) })
	}
}

func testSdotSaxpy(t *testing.T, Sdot func(x, y []float32) float32, Saxpy func(float32, []float32, []float32)) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range level1Lengths {
		x := randMatrix[float32](rng, 1, n, max(n, 1))
		y := randMatrix[float32](rng, 1, n, max(n, 1))
		var want, abs float64
		for i := range n {
			want += float64(x[i]) * float64(y[i])
			abs += math.Abs(float64(x[i]) * float64(y[i]))
		}
		tol := 2 * float64(n+2) * 0x1p-24 * abs
		assert.InDelta(t, want, float64(Sdot(x, y)), tol+1e-300, "n=%d", n)
		assert.Equal(t, Sdot(x, y), Sdot(x, y), "n=%d: repeatable", n)

		got := slices.Clone(y)
		Saxpy(-0.75, x, got)
		for i := range n {
			w := float64(y[i]) - 0.75*float64(x[i])
			assert.InDelta(t, w, float64(got[i]), 2*0x1p-24*(math.Abs(float64(y[i]))+math.Abs(0.75*float64(x[i]))), "n=%d i=%d", n, i)
		}
	}
}

func TestDdotDaxpy(t *testing.T) {
	t.Parallel()
	for _, im := range level1Impls {
		t.Run(im.name, func(t *testing.T) { testDdotDaxpy(t, im.ddot, im.daxpy) })
	}
}

func testDdotDaxpy(t *testing.T, Ddot func(x, y []float64) float64, Daxpy func(float64, []float64, []float64)) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range level1Lengths {
		x := randMatrix[float64](rng, 1, n, max(n, 1))
		y := randMatrix[float64](rng, 1, n, max(n, 1))
		var abs float64
		for i := range n {
			abs += math.Abs(x[i] * y[i])
		}
		// Compare against a compensated (Neumaier) sum, accurate to about u.
		want := kahanDot(x, y)
		tol := 2 * float64(n+2) * 0x1p-53 * abs
		assert.InDelta(t, want, Ddot(x, y), tol+1e-300, "n=%d", n)

		got := slices.Clone(y)
		Daxpy(2.5, x, got)
		for i := range n {
			assert.InDelta(t, y[i]+2.5*x[i], got[i], 4*0x1p-53*(math.Abs(y[i])+math.Abs(2.5*x[i])), "n=%d i=%d", n, i)
		}
	}
}

func kahanDot(x, y []float64) float64 {
	var s, comp float64
	for i := range x {
		p := x[i] * y[i]
		e := math.FMA(x[i], y[i], -p) // exact error of the product
		t := s + p
		if math.Abs(s) >= math.Abs(p) {
			comp += (s - t) + p
		} else {
			comp += (p - t) + s
		}
		comp += e
		s = t
	}
	return s + comp
}

func TestLevel1PanicsOnLengthMismatch(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "kernels: Sdot: len(x) = 2 and len(y) = 3, must be equal", func() { Sdot(make([]float32, 2), make([]float32, 3)) })
	assert.PanicsWithValue(t, "kernels: Saxpy: len(x) = 3 and len(y) = 2, must be equal", func() { Saxpy(1, make([]float32, 3), make([]float32, 2)) })
	assert.PanicsWithValue(t, "kernels: Ddot: len(x) = 1 and len(y) = 0, must be equal", func() { Ddot(make([]float64, 1), nil) })
	assert.PanicsWithValue(t, "kernels: Daxpy: len(x) = 0 and len(y) = 4, must be equal", func() { Daxpy(1, nil, make([]float64, 4)) })
}
