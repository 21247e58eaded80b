//go:build !amd64 || purego

package kernels

func expSum64Steps([]float64, float64, *[expLanes]float64) {
	panic("kernels: expSum64Steps without its assembly")
}

func expShiftSteps([]float32, float64, float64, bool, *[expLanes]float64) {
	panic("kernels: expShiftSteps without its assembly")
}

func swigluSteps(g, u, h, sg []float32) {
	panic("kernels: swigluSteps without its assembly")
}
