package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// bigExp is e^t to 60 significant digits (math/big), rounded to float64.
func bigExp(t float64) float64 {
	// e^t = 2^n · e^r with r = t − n·ln2 small: the series of e^r in
	// 200-bit floats, ln2 from its own series.
	const prec = 200
	ln2 := new(big.Float).SetPrec(prec)
	{ // ln2 = Σ 1/(k·2^k)
		term := new(big.Float).SetPrec(prec)
		for k := 1; k < 220; k++ {
			term.SetFloat64(1)
			term.Quo(term, new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(float64(k)), k))
			ln2.Add(ln2, term)
		}
	}
	n := math.Round(t / math.Ln2)
	r := new(big.Float).SetPrec(prec).SetFloat64(t)
	r.Sub(r, new(big.Float).SetPrec(prec).Mul(ln2, new(big.Float).SetPrec(prec).SetFloat64(n)))
	sum := new(big.Float).SetPrec(prec).SetFloat64(1)
	term := new(big.Float).SetPrec(prec).SetFloat64(1)
	for k := 1; k < 60; k++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k)))
		sum.Add(sum, term)
	}
	f, _ := sum.Float64()
	return math.Ldexp(f, int(n))
}

// TestExpF64Accuracy holds expF64 to 2 ulp of e^t computed with 200-bit
// arithmetic, over the range softmax shifts give (t ≤ 0) and beyond.
func TestExpF64Accuracy(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for i := range 3000 {
		var x float64
		switch i % 3 {
		case 0:
			x = -rng.Float64() * 20
		case 1:
			x = (rng.Float64() - 0.5) * 1400
		default:
			x = (rng.Float64() - 0.5) * 2
		}
		want := bigExp(x)
		got := expF64(x)
		if want == 0 || math.IsInf(want, 0) || want < 0x1p-1022 {
			require.Equal(t, want, got, "exp(%v) past the normal range", x)
			continue
		}
		ulp := math.Nextafter(want, math.Inf(1)) - want
		d := math.Abs(got-want) / ulp
		worst = max(worst, d)
		require.LessOrEqual(t, d, 2.0, "exp(%v) = %v, want %v (%g ulp)", x, got, want, d)
	}
	t.Logf("worst error %.2f ulp", worst)
	for _, c := range []struct{ x, want float64 }{
		{0, 1}, {math.Inf(-1), 0}, {math.Inf(1), math.Inf(1)}, {-746, 0}, {710, math.Inf(1)}, {-1e300, 0},
	} {
		require.Equal(t, c.want, expF64(c.x), "exp(%v)", c.x)
	}
	require.True(t, math.IsNaN(expF64(math.NaN())))
}

// expShiftRef is ExpShift in plain Go, element by element: expF64 where
// the assembly runs, else math.Exp.
func expShiftRef(x []float32, shift, mul float64, store bool) float64 {
	exp := math.Exp
	if expAsm {
		exp = expF64
	}
	var lanes [expLanes]float64
	for j := range x {
		e := exp(float64(x[j]) - shift)
		if store {
			x[j] = float32(mul * e)
		}
		lanes[j%expLanes] += e
	}
	return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]))
}

// expShiftRef64 is ExpShiftSum64 in plain Go.
func expShiftRef64(x []float64, shift float64) float64 {
	exp := math.Exp
	if expAsm {
		exp = expF64
	}
	var lanes [expLanes]float64
	for j, v := range x {
		lanes[j%expLanes] += exp(v - shift)
	}
	return sumLanes(&lanes)
}

// TestExpShiftIsItsGo checks ExpShift, ExpShiftSum and ExpShiftSum64 (the assembly where
// the CPU has it) against expShiftRef bit for bit, for lengths around the
// 8-element steps and special values, and the sum against math.Exp's.
func TestExpShiftIsItsGo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 70 {
		x := make([]float32, n)
		for j := range x {
			x[j] = float32(rng.NormFloat64() * 8)
			switch rng.IntN(40) {
			case 0:
				x[j] = float32(math.Inf(-1))
			case 1:
				x[j] = float32(math.Inf(1))
			case 2:
				x[j] = -1e30
			case 3:
				x[j] = float32(math.NaN())
			}
		}
		shift := rng.NormFloat64() * 4
		mul := 1.0
		if n%2 == 1 {
			mul = -rng.Float64() * 3
		}
		want := append([]float32(nil), x...)
		wantSum := expShiftRef(want, shift, mul, true)
		got := append([]float32(nil), x...)
		sum := ExpShift(got, shift, mul)
		require.Equal(t, math.Float64bits(wantSum), math.Float64bits(sum), "n=%d: sum %v, want %v", n, sum, wantSum)
		for j := range got {
			require.Equal(t, math.Float32bits(want[j]), math.Float32bits(got[j]), "n=%d element %d of %v: %v, want %v", n, j, x[j], got[j], want[j])
		}
		x64 := make([]float64, n)
		for j, v := range x {
			x64[j] = float64(v) + float64(j)*1e-9 // not float32 values
		}
		want64 := expShiftRef64(x64, shift)
		require.Equal(t, math.Float64bits(want64), math.Float64bits(ExpShiftSum64(x64, shift)), "n=%d: ExpShiftSum64", n)
		keep := append([]float32(nil), x...)
		require.Equal(t, math.Float64bits(wantSum), math.Float64bits(ExpShiftSum(keep, shift)), "n=%d: ExpShiftSum", n)
		for j := range keep {
			require.Equal(t, math.Float32bits(x[j]), math.Float32bits(keep[j]), "ExpShiftSum wrote x")
		}
		var plain float64
		for _, v := range x {
			plain += math.Exp(float64(v) - shift)
		}
		if !math.IsNaN(plain) && !math.IsInf(plain, 0) {
			require.InDelta(t, plain, sum, 1e-14*plain, "n=%d: against math.Exp", n)
		}
	}
}

func FuzzExpShift(f *testing.F) {
	f.Add(float32(0), float32(1), float32(-3), 0.5, 1.0, uint8(9))
	f.Fuzz(func(t *testing.T, a, b, c float32, shift, mul float64, n uint8) {
		x := make([]float32, int(n)%40)
		for j := range x {
			x[j] = [3]float32{a, b, c}[j%3]
		}
		want := append([]float32(nil), x...)
		ws := expShiftRef(want, shift, mul, true)
		got := append([]float32(nil), x...)
		gs := ExpShift(got, shift, mul)
		if math.Float64bits(ws) != math.Float64bits(gs) && !(ws != ws && gs != gs) {
			t.Fatalf("sum %v, want %v", gs, ws)
		}
		for j := range got {
			if math.Float32bits(want[j]) != math.Float32bits(got[j]) && !(want[j] != want[j] && got[j] != got[j]) {
				t.Fatalf("element %d: %v, want %v", j, got[j], want[j])
			}
		}
	})
}

// BenchmarkExpShift compares ExpShift with the loop it replaces
// (math.Exp per element) on a softmax row of 384 scores.
func BenchmarkExpShift(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 384)
	for j := range x {
		x[j] = float32(rng.NormFloat64() * 3)
	}
	row := make([]float32, len(x))
	b.Run("ExpShift", func(b *testing.B) {
		for b.Loop() {
			copy(row, x)
			ExpShift(row, 2, 1)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/element")
	})
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			copy(row, x)
			var s float64
			for j, v := range row {
				e := math.Exp(float64(v) - 2)
				row[j] = float32(e)
				s += e
			}
			_ = s
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/element")
	})
}
