//go:build amd64 && !purego

package kernels

import "math"

//go:noescape
func swigluAVX512(gate, up, h, sg *float32, n int, consts *float32)

// swigluConsts are expf's constants in float32, as swigluAVX512 loads them.
var swigluConsts = [15]float32{expfLog2e, 0.5, expfLn2Hi, expfLn2Lo, expfMax, expfMin,
	expfC6, expfC5, expfC4, expfC3, expfC2, expfC1, 1, float32(math.Inf(1)), float32(math.Copysign(0, -1))}

func init() { swigluAsm = hasAVX512 && !asmDisabled() }

func swigluSteps(g, u, h, sg []float32) {
	var sp *float32
	if sg != nil {
		sp = &sg[0]
	}
	swigluAVX512(&g[0], &u[0], &h[0], sp, len(h), &swigluConsts[0])
}
