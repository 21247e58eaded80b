//go:build !amd64 || purego

package kernels

// No assembly kernels on this architecture or under the purego tag.

func asmSgemmImpls() []*gemmImpl[float32] { return nil }

func asmDgemmImpls() []*gemmImpl[float64] { return nil }
