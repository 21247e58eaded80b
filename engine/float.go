package engine

import "math"

// Float is the element type of every tensor in the engine.
type Float interface{ ~float32 | ~float64 }

// isFinite reports whether x is neither NaN nor ±Inf.
func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// toT converts a float64 slice to a new []T.
func toT[T Float](x []float64) []T {
	out := make([]T, len(x))
	for i, v := range x {
		out[i] = T(v)
	}
	return out
}

// clone returns a copy of x (nil stays nil).
func clone[T any](x []T) []T {
	if x == nil {
		return nil
	}
	return append(make([]T, 0, len(x)), x...)
}

// zeros returns a zeroed slice of length n.
func zeros[T Float](n int) []T { return make([]T, n) }

// grow returns buf resliced to length n, reallocating when its capacity is
// too small, and zeroed when zero is true.
func grow[T Float](buf []T, n int, zero bool) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	buf = buf[:n]
	if zero {
		clear(buf)
	}
	return buf
}
