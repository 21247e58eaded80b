package kernels

// sgemmImpls lists every float32 implementation this machine can run, the
// portable one first.
func sgemmImpls() []*gemmImpl[float32] {
	return append([]*gemmImpl[float32]{goSgemm}, asmSgemmImpls()...)
}

func dgemmImpls() []*gemmImpl[float64] {
	return append([]*gemmImpl[float64]{goDgemm}, asmDgemmImpls()...)
}
