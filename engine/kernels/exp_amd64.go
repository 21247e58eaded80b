//go:build amd64 && !purego

package kernels

import "math"

//go:noescape
func expShiftAVX512(x *float32, n int, shift, mul float64, store bool, lanes *[expLanes]float64, consts *float64)

//go:noescape
func expSumAVX512F64(x *float64, n int, shift float64, lanes *[expLanes]float64, consts *float64)

//go:noescape
func expShiftAVX2(x *float32, n int, shift, mul float64, store bool, lanes *[expLanes]float64, consts *float64)

//go:noescape
func expSumAVX2F64(x *float64, n int, shift float64, lanes *[expLanes]float64, consts *float64)

// expConsts are expF64's constants in the order expShiftAVX512 loads them.
var expConsts = func() [18]float64 {
	c := [18]float64{expLog2e, expLn2Hi, expLn2Lo, expClamp}
	copy(c[4:], expPoly[:])
	return c
}()

// expConsts4 are the AVX2 assembly's constants, each in four lanes (see
// exp_amd64.s): log₂e, ln2Hi, ln2Lo, the clamp and its negation, the
// magic 1.5·2⁵² and the integer 1023 − bits(1.5·2⁵²) that turn an integral
// float64 h into the bits of 2ʰ, 0.5, then expPoly.
var expConsts4 = func() (c [8 + len(expPoly)][4]float64) {
	const magic = 1.5 * (1 << 52)
	rows := []float64{expLog2e, expLn2Hi, expLn2Lo, expClamp, -expClamp, magic,
		math.Float64frombits(uint64(1023 - int64(math.Float64bits(magic)))), 0.5}
	rows = append(rows, expPoly[:]...)
	for i, v := range rows {
		c[i] = [4]float64{v, v, v, v}
	}
	return c
}()

// expAVX512 picks the AVX-512 assembly over the AVX2 one.
var expAVX512 bool

func init() {
	expAsm = hasAVX2 && !asmDisabled()
	expAVX512 = expAsm && hasAVX512
}

func expSum64Steps(x []float64, shift float64, lanes *[expLanes]float64) {
	if expAVX512 {
		expSumAVX512F64(&x[0], len(x), shift, lanes, &expConsts[0])
		return
	}
	expSumAVX2F64(&x[0], len(x), shift, lanes, &expConsts4[0][0])
}

func expShiftSteps(x []float32, shift, mul float64, store bool, lanes *[expLanes]float64) {
	if expAVX512 {
		expShiftAVX512(&x[0], len(x), shift, mul, store, lanes, &expConsts[0])
		return
	}
	expShiftAVX2(&x[0], len(x), shift, mul, store, lanes, &expConsts4[0][0])
}
