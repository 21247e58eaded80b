package kernels_test

import (
	"fmt"

	"github.com/tandemrl/tandem/engine/kernels"
)

// A linear layer's forward pass, Y = X·Wᵀ, with the weight stored out×in as
// PyTorch stores it: transB = true.
func ExamplePar_Sgemm() {
	x := []float32{ // 2 rows (tokens) × 3 inputs
		1, 2, 3,
		4, 5, 6,
	}
	w := []float32{ // 2 outputs × 3 inputs
		1, 0, -1,
		0.5, 0.5, 0.5,
	}
	y := make([]float32, 2*2)
	p := kernels.Par{Threads: 2} // never changes the result, only the speed
	p.Sgemm(false, true, 2, 2, 3, 1, x, 3, w, 3, 0, y, 2)
	fmt.Println(y)

	// Accumulate a gradient: dW += dYᵀ·X (transA = true), beta = 1.
	dy := []float32{1, 0, 0, 1}
	dw := make([]float32, 2*3)
	p.Sgemm(true, false, 2, 3, 2, 1, dy, 2, x, 3, 1, dw, 3)
	fmt.Println(dw)
	// Output:
	// [-2 3 -2 7.5]
	// [1 2 3 4 5 6]
}

func ExampleSdot() {
	fmt.Println(kernels.Sdot([]float32{1, 2, 3}, []float32{4, 5, 6}))
	// Output: 32
}
