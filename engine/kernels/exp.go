package kernels

import "math"

// ExpShift sets x[j] = float32(mul·eⱼ), eⱼ = exp(float64(x[j]) − shift)
// (one rounding, from float64), and returns the sum of the eⱼ in float64:
// with mul = 1 the exponentials of a softmax over float32 scores, shift
// their maximum; with shift a log-sum-exp and mul a coefficient, a
// softmax's gradient. ExpShiftSum returns the sum alone.
//
// With AVX-512 or AVX2, exp is computed in float64, eight or four
// elements at a time, to within 2 ulp of the exact value (so each x[j] is
// the float32 rounding of the exact exponential but for values within
// about 1e-16 of halfway between two float32s): with n the integer
// nearest t·log₂e and r = t − n·ln2 (|r| ≤ ln2/2, two FMA steps with ln2
// split in two), eʳ is the degree-13 Taylor polynomial in Horner form (13
// FMAs; the first omitted term is below 2⁻⁵⁸ of the result), scaled by 2ⁿ
// (expF64 is the same operations in Go; tests hold the assembly to it bit
// for bit; the AVX2 code, with no VSCALEFPD, scales in two steps, the
// first exact, with the same result). t is first clamped to [−1000,
// 1000], so −Inf gives 0 and +Inf gives +Inf; a NaN stays NaN. Elsewhere
// each eⱼ is math.Exp's (within 1 ulp; a scalar Horner chain of 13 FMAs is
// slower than it). Either way the sum is kept in 8 lanes, lane l summing
// the eⱼ with j ≡ l mod 8 in order of j, then added as ((s₀+s₄) + (s₂+s₆))
// + ((s₁+s₅) + (s₃+s₇)): a fixed function of x and shift on one machine;
// the two implementations differ in the last bits. About 1.2 ns an
// element with AVX-512 against 11–17 for math.Exp's loop
// (BenchmarkExpShift); with AVX2 on AMD's Zen 3, 3.3 against 21.8.
func ExpShift(x []float32, shift, mul float64) float64 { return expShift(x, shift, mul, true) }

// ExpShiftSum is ExpShift without writing x.
func ExpShiftSum(x []float32, shift float64) float64 { return expShift(x, shift, 1, false) }

func expShift(x []float32, shift, mul float64, store bool) float64 {
	if len(x) == 0 {
		return 0
	}
	var lanes [expLanes]float64
	done := 0
	exp := math.Exp
	if expAsm {
		done = len(x) / expLanes * expLanes
		if done > 0 {
			expShiftSteps(x[:done], shift, mul, store, &lanes)
		}
		exp = expF64
	}
	// The arguments first, then the exponentials: a float32 widened into
	// the register the last exponential left would make each wait on the
	// one before (CVTSS2SD writes half a register), about 3× slower.
	var t [expLanes]float64
	for j0 := done; j0 < len(x); j0 += expLanes {
		part := x[j0:min(j0+expLanes, len(x))]
		for l, v := range part {
			t[l] = float64(v) - shift
		}
		for l := range part {
			e := exp(t[l])
			if store {
				part[l] = float32(mul * e)
			}
			lanes[l] += e
		}
	}
	return sumLanes(&lanes)
}

// ExpShiftSum64 is ExpShiftSum over float64 elements: the sum of
// exp(x[j] − shift), computed and summed as ExpShiftSum does (with
// AVX-512 or AVX2 expF64's arithmetic, elsewhere math.Exp's).
func ExpShiftSum64(x []float64, shift float64) float64 {
	var lanes [expLanes]float64
	done := 0
	exp := math.Exp
	if expAsm {
		done = len(x) / expLanes * expLanes
		if done > 0 {
			expSum64Steps(x[:done], shift, &lanes)
		}
		exp = expF64
	}
	var t [expLanes]float64
	for j0 := done; j0 < len(x); j0 += expLanes {
		part := x[j0:min(j0+expLanes, len(x))]
		for l, v := range part {
			t[l] = v - shift
		}
		for l := range part {
			lanes[l] += exp(t[l])
		}
	}
	return sumLanes(&lanes)
}

// sumLanes adds ExpShift's partial sums in its order.
func sumLanes(l *[expLanes]float64) float64 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

// expLanes is how many partial sums ExpShift keeps.
const expLanes = 8

// expAsm reports whether expShiftSteps runs (AVX2 or AVX-512): expShift's loop
// over x, a multiple of expLanes long, adding eⱼ to lanes[j%expLanes],
// with expF64's arithmetic.
var expAsm bool

// The constants of expF64 (and of the assembly, which loads them from
// expConsts in this order).
const (
	expLog2e = 1.4426950408889634     // log₂e
	expLn2Hi = 0.6931471803691238     // ln2's high bits: n·expLn2Hi is exact for |n| < 2²⁰
	expLn2Lo = 1.9082149292705877e-10 // ln2 − expLn2Hi
	expClamp = 1000.0                 // beyond ±745 exp is 0 or +Inf in float64
)

// expPoly are 1/k! for k = 13 down to 0, Horner's order.
var expPoly = [14]float64{
	1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
	1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1, 1,
}

// expF64 is the assembly's exponential of t, for its last partial
// step and for tests.
func expF64(t float64) float64 {
	if t != t {
		return t
	}
	t = min(max(t, -expClamp), expClamp)
	n := math.RoundToEven(t * expLog2e)
	r := math.FMA(-n, expLn2Hi, t)
	r = math.FMA(-n, expLn2Lo, r)
	p := expPoly[0]
	for _, c := range expPoly[1:] {
		p = math.FMA(p, r, c)
	}
	if n >= -1021 && n <= 1023 { // p·2ⁿ is normal (p < 2): exact, as Ldexp
		return p * math.Float64frombits(uint64(int64(n)+1023)<<52)
	}
	return math.Ldexp(p, int(n))
}
