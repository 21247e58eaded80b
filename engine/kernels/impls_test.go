package kernels

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every call joins
// the goroutines it starts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sgemmImpls lists every float32 implementation this machine can run, the
// portable one first.
func sgemmImpls() []*gemmImpl[float32] {
	return append([]*gemmImpl[float32]{goSgemm}, asmSgemmImpls()...)
}

func dgemmImpls() []*gemmImpl[float64] {
	return append([]*gemmImpl[float64]{goDgemm}, asmDgemmImpls()...)
}

// pathVariants returns copies of im that force each choice the driver makes
// on its own (packing A or B or not, the dot, narrow and swapped paths off),
// so that tests reach every path whatever the thresholds are.
func pathVariants[T float](im *gemmImpl[T]) []*gemmImpl[T] {
	set := []struct {
		name string
		f    func(*gemmImpl[T])
	}{
		{"as-is", func(*gemmImpl[T]) {}},
		{"packA", func(v *gemmImpl[T]) { v.packAMinPanels, v.packATransMinPanels = 1, 1 }},
		{"noPackA", func(v *gemmImpl[T]) { v.packAMinPanels, v.packATransMinPanels = 1<<30, 1<<30 }},
		{"packB,noDot", func(v *gemmImpl[T]) { v.packBMinRows, v.dot = 0, nil }},
		{"noPackB,noDot", func(v *gemmImpl[T]) { v.packBMinRows, v.dot = 1<<30, nil }},
		{"noNarrow,noSwap,kc=7", func(v *gemmImpl[T]) { v.narrow, v.swapMaxN, v.kc = nil, 0, 7 }},
		{"swapAll", func(v *gemmImpl[T]) { v.narrow, v.swapMaxN = nil, 1<<30 }},
		{"smallSlabs", func(v *gemmImpl[T]) { v.packBMinRows, v.dot, v.kc, v.chunk, v.maxPackedB = 0, nil, 5, 1, 1 }},
	}
	var out []*gemmImpl[T]
	for _, s := range set {
		v := *im
		v.minWork = 1000 // go parallel on the tests' small products
		s.f(&v)
		v.name = fmt.Sprintf("%s[%s]", im.name, s.name)
		out = append(out, &v)
	}
	return out
}

// TestImplInvariants checks what the driver's determinism rests on: work
// items start on the tile grid (mc is a multiple of mr), and the blocking
// sizes are positive.
func TestImplInvariants(t *testing.T) {
	t.Parallel()
	check := func(name string, mr, nr, mc, kc, chunk int) {
		if mr <= 0 || nr <= 0 || kc <= 0 || chunk <= 0 || mc <= 0 || mc%mr != 0 {
			t.Errorf("%s: mr=%d nr=%d mc=%d kc=%d chunk=%d: need positive sizes and mc a multiple of mr", name, mr, nr, mc, kc, chunk)
		}
	}
	for _, im := range sgemmImpls() {
		check(im.name, im.mr, im.nr, im.mc, im.kc, im.chunk)
	}
	for _, im := range dgemmImpls() {
		check(im.name, im.mr, im.nr, im.mc, im.kc, im.chunk)
	}
}
