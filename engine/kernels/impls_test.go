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
		{"swapAll", func(v *gemmImpl[T]) { v.narrow, v.swapMaxN = nil, 1 << 30 }},
	}
	var out []*gemmImpl[T]
	for _, s := range set {
		v := *im
		s.f(&v)
		v.name = fmt.Sprintf("%s[%s]", im.name, s.name)
		out = append(out, &v)
	}
	return out
}
