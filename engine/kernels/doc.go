// Package kernels holds the dense linear-algebra kernels the embedded engine
// runs on: GEMM in float32 and float64 (Par.Sgemm, Par.Dgemm) and the level-1
// routines Sdot, Saxpy, Ddot, Daxpy.
//
// Draft: see the final version of this comment for layout, determinism and
// measured speed.
package kernels
