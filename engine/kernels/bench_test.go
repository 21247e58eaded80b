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

// benchShape is one GEMM the engine runs; name says where it comes from.
type benchShape struct {
	name    string
	tA, tB  bool
	m, n, k int
}

// benchShapes are the engine's products: its default model (dim 128, hidden
// 512, vocab 98, LoRA rank 16; 2048 training rows, 8 sampled sequences) and
// a wider one (dim 256, hidden 768, 4096 rows). Weights are stored out×in,
// so the forward pass is X·Wᵀ, the input gradient G·W, the weight gradient
// Gᵀ·X.
var benchShapes = []benchShape{
	{"sample8-d128-qkv-XWt", false, true, 8, 128, 128},
	{"sample8-d128-up-XWt", false, true, 8, 512, 128},
	{"sample8-d128-down-XWt", false, true, 8, 128, 512},
	{"sample8-d256-up-XWt", false, true, 8, 768, 256},
	{"prefill64-d128-up-XWt", false, true, 64, 512, 128},
	{"prefill256-d256-up-XWt", false, true, 256, 768, 256},
	{"train2k-d128-up-XWt", false, true, 2048, 512, 128},
	{"train2k-d128-down-XWt", false, true, 2048, 128, 512},
	{"train2k-d128-unembed-XWt", false, true, 2048, 98, 128},
	{"train2k-d128-dX-GW", false, false, 2048, 128, 512},
	{"train2k-d128-dW-GtX", true, false, 512, 128, 2048},
	{"train4k-d256-up-XWt", false, true, 4096, 768, 256},
	{"train4k-d256-dX-GW", false, false, 4096, 256, 768},
	{"train4k-d256-dW-GtX", true, false, 768, 256, 4096},
	{"train4k-d256-up-XW", false, false, 4096, 768, 256},
	// LoRA of rank 16 on a 128→512 projection over 2048 rows: X·Aᵀ, U·Bᵀ,
	// G·B, and the adapter gradients Gᵀ·U and (G·B)ᵀ·X.
	{"lora16-XAt", false, true, 2048, 16, 128},
	{"lora16-UBt", false, true, 2048, 512, 16},
	{"lora16-GB", false, false, 2048, 16, 512},
	{"lora16-dB-GtU", true, false, 512, 16, 2048},
	{"lora16-dA-TtX", true, false, 16, 128, 2048},
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
			start := processCPU()
			for b.Loop() {
				p.Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc)
			}
			// Per CPU-second of the whole process: on an idle machine the
			// clock rate approaches this times the threads used; on a shared
			// one it shows the parallel overhead apart from the contention.
			if cpu := processCPU() - start; cpu > 0 {
				b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/cpu.Seconds()/1e9, "procGFLOP/s")
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
