package kernels

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkSgemmVariants runs the blocking choices of the float32 kernels
// side by side on the engine's shapes (for tuning the thresholds).
func BenchmarkSgemmVariants(b *testing.B) {
	base := *sgemmImpl
	variants := map[string]func(*gemmImpl[float32]){
		"packA=always": func(im *gemmImpl[float32]) { im.packAMinPanels = 1 },
		"packA=never":  func(im *gemmImpl[float32]) { im.packAMinPanels = 1 << 30 },
		"packB=always": func(im *gemmImpl[float32]) { im.packBMinRows = 0; im.dot = nil },
		"packB=never":  func(im *gemmImpl[float32]) { im.packBMinRows = 1 << 30; im.dot = nil },
	}
	for _, s := range benchShapes {
		a, bb, c, lda, ldb, ldc := s.operands()
		for _, name := range []string{"packA=always", "packA=never", "packB=always", "packB=never"} {
			im := base
			variants[name](&im)
			b.Run(fmt.Sprintf("%s/%s", s.name, name), func(b *testing.B) {
				p := Par{Threads: runtime.GOMAXPROCS(0)}
				for b.Loop() {
					gemm(&im, p, s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc)
				}
				reportGFLOPS(b, s)
			})
		}
	}
}
