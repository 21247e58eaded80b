//go:build amd64 && !purego

package kernels

//go:noescape
func expShiftAVX512(x *float32, n int, shift, mul float64, store bool, lanes *[expLanes]float64, consts *float64)

//go:noescape
func expSumAVX512F64(x *float64, n int, shift float64, lanes *[expLanes]float64, consts *float64)

// expConsts are expF64's constants in the order expShiftAVX512 loads them.
var expConsts = func() [18]float64 {
	c := [18]float64{expLog2e, expLn2Hi, expLn2Lo, expClamp}
	copy(c[4:], expPoly[:])
	return c
}()

func init() { expAsm = hasAVX512 && !asmDisabled() }

func expSum64Steps(x []float64, shift float64, lanes *[expLanes]float64) {
	expSumAVX512F64(&x[0], len(x), shift, lanes, &expConsts[0])
}

func expShiftSteps(x []float32, shift, mul float64, store bool, lanes *[expLanes]float64) {
	expShiftAVX512(&x[0], len(x), shift, mul, store, lanes, &expConsts[0])
}
