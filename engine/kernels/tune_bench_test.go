package kernels

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSgemmTuning runs blocking choices of the selected float32 kernels
// side by side on the engine's shapes, to set their thresholds:
// go test -run - -bench SgemmTuning -count 3.
func BenchmarkSgemmTuning(b *testing.B) {
	type variant struct {
		name string
		set  func(*gemmImpl[float32])
	}
	var variants []variant
	for _, kc := range []int{128, 256, 384} {
		for _, pa := range []int{1, 1 << 30} {
			variants = append(variants, variant{fmt.Sprintf("kc=%d,packA=%t", kc, pa == 1), func(im *gemmImpl[float32]) {
				im.kc, im.packAMinPanels, im.packATransMinPanels = kc, pa, pa
			}})
		}
	}
	variants = append(variants,
		variant{"packB=always", func(im *gemmImpl[float32]) { im.packBMinRows = 0; im.dot = nil }},
		variant{"packB=never", func(im *gemmImpl[float32]) { im.packBMinRows = 1 << 30; im.dot = nil }},
	)
	for _, s := range benchShapes {
		a, bb, c, lda, ldb, ldc := s.operands()
		for _, v := range variants {
			im := *sgemmImpl
			v.set(&im)
			b.Run(s.name+"/"+v.name, func(b *testing.B) {
				// One thread, timed by the CPU time of its OS thread, so that
				// other processes on a shared machine do not blur the
				// comparison.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				start := threadCPU()
				for b.Loop() {
					gemm(&im, Par{}, s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc)
				}
				reportCPUGFLOPS(b, s, threadCPU()-start)
				reportGFLOPS(b, s)
			})
		}
	}
}
