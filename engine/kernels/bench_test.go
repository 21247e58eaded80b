package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// benchShape is one GEMM the engine runs; name says where it comes from
// (dim 256, hidden 768, vocab 256, rows = batch·seq).
type benchShape struct {
	name    string
	tA, tB  bool
	m, n, k int
}

var benchShapes = []benchShape{
	{"sample-qkv-XWt", false, true, 8, 768, 256},
	{"sample-down-XWt", false, true, 8, 256, 768},
	{"sample-unembed-XWt", false, true, 8, 256, 256},
	{"sample-XW", false, false, 8, 768, 256},
	{"attn-QKt", false, true, 128, 128, 32},
	{"attn-PV", false, false, 128, 32, 128},
	{"d128-fwd-XWt", false, true, 1024, 512, 128},
	{"train-fwd-XWt", false, true, 4096, 768, 256},
	{"train-fwd-XW", false, false, 4096, 768, 256},
	{"train-bwd-GW", false, false, 4096, 256, 768},
	{"train-bwd-GtX", true, false, 768, 256, 4096},
	{"train-unembed-XWt", false, true, 4096, 256, 256},
	// LoRA of rank 16 on a 256→768 projection: X·Aᵀ, H·Bᵀ and the two
	// adapter gradients.
	{"lora-XAt", false, true, 4096, 16, 256},
	{"lora-HBt", false, true, 4096, 768, 16},
	{"lora-dB-GtH", true, false, 768, 16, 4096},
	{"lora-dA-dHtX", true, false, 16, 256, 4096},
}

func (s benchShape) operands() (a, b, c []float32, lda, ldb, ldc int) {
	o := newOperands[float32](rand.New(rand.NewPCG(1, 1)), shape{tA: s.tA, tB: s.tB, m: s.m, n: s.n, k: s.k})
	return o.a, o.b, o.c, o.lda, o.ldb, o.ldc
}

func reportGFLOPS(b *testing.B, s benchShape) {
	b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkSgemm compares this package (on GOMAXPROCS goroutines: run with
// -cpu 1,2), gonum's pure-Go BLAS (which also uses GOMAXPROCS) and a naive
// triple loop, on the engine's shapes.
func BenchmarkSgemm(b *testing.B) {
	for _, s := range benchShapes {
		a, bb, c, lda, ldb, ldc := s.operands()
		b.Run(s.name+"/tandem", func(b *testing.B) {
			p := Par{Threads: runtime.GOMAXPROCS(0)}
			for b.Loop() {
				p.Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc)
			}
			reportGFLOPS(b, s)
		})
		b.Run(s.name+"/gonum", func(b *testing.B) {
			tA, tB := blas.NoTrans, blas.NoTrans
			if s.tA {
				tA = blas.Trans
			}
			if s.tB {
				tB = blas.Trans
			}
			for b.Loop() {
				gonum.Implementation{}.Sgemm(tA, tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc)
			}
			reportGFLOPS(b, s)
		})
		if s.m*s.n*s.k > 1<<26 && testing.Short() {
			continue
		}
		b.Run(s.name+"/naive", func(b *testing.B) {
			for b.Loop() {
				naiveSgemm(s.tA, s.tB, s.m, s.n, s.k, a, lda, bb, ldb, c, ldc)
			}
			reportGFLOPS(b, s)
		})
	}
}

// BenchmarkSgemmImpls runs every float32 implementation this machine has
// (portable, AVX2, AVX-512) on one thread, timed by the thread's CPU time
// (cpuGFLOP/s) as well as by the clock.
func BenchmarkSgemmImpls(b *testing.B) {
	for _, s := range benchShapes {
		a, bb, c, lda, ldb, ldc := s.operands()
		for _, im := range sgemmImpls() {
			if im == goSgemm && s.m*s.n*s.k > 1<<26 && testing.Short() {
				continue
			}
			b.Run(s.name+"/"+im.name, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				start := threadCPU()
				for b.Loop() {
					gemm(im, Par{}, s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc)
				}
				reportCPUGFLOPS(b, s, threadCPU()-start)
				reportGFLOPS(b, s)
			})
		}
	}
}

func reportCPUGFLOPS(b *testing.B, s benchShape, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/cpu.Seconds()/1e9, "cpuGFLOP/s")
	}
}

// naiveSgemm is the textbook triple loop, C = op(A)·op(B), float32 sums.
func naiveSgemm(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float32
			for p := range k {
				var x, y float32
				if tA {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if tB {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				s += x * y
			}
			c[i*ldc+j] = s
		}
	}
}

func BenchmarkDgemm(b *testing.B) {
	for _, s := range benchShapes {
		o := newOperands[float64](rand.New(rand.NewPCG(1, 1)), shape{tA: s.tA, tB: s.tB, m: s.m, n: s.n, k: s.k})
		b.Run(s.name+"/tandem", func(b *testing.B) {
			p := Par{Threads: runtime.GOMAXPROCS(0)}
			for b.Loop() {
				p.Dgemm(s.tA, s.tB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0, o.c, o.ldc)
			}
			reportGFLOPS(b, s)
		})
	}
}

func BenchmarkSdot(b *testing.B) {
	for _, n := range []int{256, 4096} {
		x := make([]float32, n)
		y := make([]float32, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				Sdot(x, y)
			}
			b.ReportMetric(2*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
