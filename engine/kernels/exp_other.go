//go:build !amd64 || purego

package kernels

func expShiftSteps([]float32, float64, float64, bool, *[expLanes]float64) {
	panic("kernels: expShiftSteps without its assembly")
}
