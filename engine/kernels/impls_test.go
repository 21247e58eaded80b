package kernels

// sgemmImpls lists every float32 implementation this machine can run, the
// portable one first.
func sgemmImpls() []*gemmImpl[float32] {
	out := []*gemmImpl[float32]{goSgemm}
	if sgemmImpl != goSgemm {
		out = append(out, sgemmImpl)
	}
	return out
}

func dgemmImpls() []*gemmImpl[float64] {
	out := []*gemmImpl[float64]{goDgemm}
	if dgemmImpl != goDgemm {
		out = append(out, dgemmImpl)
	}
	return out
}
