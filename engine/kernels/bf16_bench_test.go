package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// bf16BenchShapes are Qwen3-0.6B's products (hidden 1024, MLP 3072): the
// sampling step's one and sixteen rows, a prefill and a training batch.
var bf16BenchShapes = []benchShape{
	{"decode1-up-XWt", false, true, 1, 3072, 1024},
	{"decode16-up-XWt", false, true, 16, 3072, 1024},
	{"train512-up-XWt", false, true, 512, 3072, 1024},
	{"train512-dX-GW", false, false, 512, 1024, 3072},
}

// BenchmarkSgemmBF16 runs each shape with a bfloat16 B through SgemmBF16
// and with the same B in float32 through Sgemm, alternately, so the two
// see the same machine; run with -cpu 1,2.
func BenchmarkSgemmBF16(b *testing.B) {
	for _, s := range bf16BenchShapes {
		rng := rand.New(rand.NewPCG(1, 1))
		a, lda, wb, ldb := bf16Operands(rng, s.tB, s.m, s.n, s.k, 0)
		w32 := make([]float32, len(wb))
		WidenBF16(w32, wb)
		c := make([]float32, s.m*s.n)
		par := Par{Threads: runtime.GOMAXPROCS(0)}
		b.Run(fmt.Sprintf("%s/bf16-%s", s.name, BF16Implementation()), func(b *testing.B) {
			for b.Loop() {
				par.SgemmBF16(s.tB, s.m, s.n, s.k, 1, a, lda, wb, ldb, 0, c, s.n)
			}
			reportGFLOPS(b, s)
		})
		b.Run(s.name+"/f32", func(b *testing.B) {
			for b.Loop() {
				par.Sgemm(false, s.tB, s.m, s.n, s.k, 1, a, lda, w32, ldb, 0, c, s.n)
			}
			reportGFLOPS(b, s)
		})
	}
}

// BenchmarkDecodeStream is the sampling step's 1-row product over weights
// that do not fit in cache: 32 projections of 3072×1024 (192 MiB in
// bfloat16, 384 MiB in float32), one after another, as a decode step
// streams a model's layers. It reports the weight bytes read per second.
func BenchmarkDecodeStream(b *testing.B) {
	const n, k, mats = 3072, 1024, 32
	rng := rand.New(rand.NewPCG(2, 2))
	a, lda, _, _ := bf16Operands(rng, true, 1, 1, k, 0)
	ws := make([][]BF16, mats)
	w32 := make([][]float32, mats)
	for i := range ws {
		_, _, ws[i], _ = bf16Operands(rng, true, 1, n, k, 0)
		w32[i] = make([]float32, n*k)
		WidenBF16(w32[i], ws[i])
	}
	c := make([]float32, n)
	par := Par{Threads: runtime.GOMAXPROCS(0)}
	b.Run("bf16-"+BF16Implementation(), func(b *testing.B) {
		for b.Loop() {
			for _, w := range ws {
				par.SgemmBF16(true, 1, n, k, 1, a, lda, w, k, 0, c, n)
			}
		}
		b.ReportMetric(float64(mats*n*k*2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	})
	b.Run("f32", func(b *testing.B) {
		for b.Loop() {
			for _, w := range w32 {
				par.Sgemm(false, true, 1, n, k, 1, a, lda, w, k, 0, c, n)
			}
		}
		b.ReportMetric(float64(mats*n*k*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	})
}
