//go:build amd64 && !purego

package kernels

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Assembly kernels. Those in gemm_amd64.s, dot_amd64.s, level1_amd64.s and
// pack_amd64.s need AVX2 and FMA; those in gemm512_amd64.s and dot512_amd64.s
// need AVX-512F. None checks bounds: the pointers must cover the extents the
// Go wrappers below check.

//go:noescape
func sgemmKernel6x16(k int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32)

//go:noescape
func dgemmKernel6x8(k int, a *float64, rsa, csa int, b *float64, ldb int, c *float64, ldc int, alpha float64, beta float64)

//go:noescape
func sgemmKernel12x32(k int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32, next *float32)

//go:noescape
func dgemmKernel12x16(k int, a *float64, rsa, csa int, b *float64, ldb int, c *float64, ldc int, alpha float64, beta float64, next *float64)

//go:noescape
func sdotKernel3x4(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32)

//go:noescape
func ddotKernel3x4(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int, alpha float64, beta float64)

//go:noescape
func sdotKernel4x4AVX512(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32)

//go:noescape
func sdotStream2AVX2(k int, a *float32, b0 *float32, b1 *float32, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)

//go:noescape
func sdotStream2AVX512(k int, a *float32, b0 *float32, b1 *float32, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)

//go:noescape
func copyRowsAVX(dst unsafe.Pointer, src unsafe.Pointer, srcStride int, rowBytes int, rows int)

//go:noescape
func transpose8x8Blocks(dst *float32, dstStride int, src *float32, srcStride int, jBlocks int, pBlocks int)

//go:noescape
func sdotAVX2(x *float32, y *float32, n int) float32

//go:noescape
func ddotAVX2(x *float64, y *float64, n int) float64

//go:noescape
func saxpyAVX2(alpha float32, x *float32, y *float32, n int)

//go:noescape
func daxpyAVX2(alpha float64, x *float64, y *float64, n int)

// avx2Sgemm is the microKernel for a 6×16 float32 tile.
func avx2Sgemm(k int, a []float32, rsa, csa int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, _ []float32) {
	_ = a[5*rsa+(k-1)*csa]
	_ = b[(k-1)*ldb+15]
	_ = c[5*ldc+15]
	sgemmKernel6x16(k, &a[0], rsa, csa, &b[0], ldb, &c[0], ldc, alpha, beta)
}

// avx2Dgemm is the microKernel for a 6×8 float64 tile.
func avx2Dgemm(k int, a []float64, rsa, csa int, b []float64, ldb int, c []float64, ldc int, alpha, beta float64, _ []float64) {
	_ = a[5*rsa+(k-1)*csa]
	_ = b[(k-1)*ldb+7]
	_ = c[5*ldc+7]
	dgemmKernel6x8(k, &a[0], rsa, csa, &b[0], ldb, &c[0], ldc, alpha, beta)
}

// avx512Sgemm is the microKernel for a 12×32 float32 tile.
func avx512Sgemm(k int, a []float32, rsa, csa int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, next []float32) {
	_ = a[11*rsa+(k-1)*csa]
	_ = b[(k-1)*ldb+31]
	_ = c[11*ldc+31]
	sgemmKernel12x32(k, &a[0], rsa, csa, &b[0], ldb, &c[0], ldc, alpha, beta, first(next))
}

// avx512Dgemm is the microKernel for a 12×16 float64 tile.
func avx512Dgemm(k int, a []float64, rsa, csa int, b []float64, ldb int, c []float64, ldc int, alpha, beta float64, next []float64) {
	_ = a[11*rsa+(k-1)*csa]
	_ = b[(k-1)*ldb+15]
	_ = c[11*ldc+15]
	dgemmKernel12x16(k, &a[0], rsa, csa, &b[0], ldb, &c[0], ldc, alpha, beta, first(next))
}

// first is &s[0], or nil when s is empty.
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// avxTranspose8x8 copies element (j, p) of src (row stride ss) to (p, j) of
// dst (row stride ds) for j < 8·jBlocks, p < 8·pBlocks.
func avxTranspose8x8(dst []float32, ds int, src []float32, ss int, jBlocks, pBlocks int) {
	if jBlocks == 0 || pBlocks == 0 {
		return
	}
	_ = src[(8*jBlocks-1)*ss+8*pBlocks-1]
	_ = dst[(8*pBlocks-1)*ds+8*jBlocks-1]
	transpose8x8Blocks(&dst[0], 4*ds, &src[0], 4*ss, jBlocks, pBlocks)
}

// avx2SdotTile is the dotKernel for 3 rows of A against 4 rows of B.
func avx2SdotTile(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32) {
	_ = a[2*lda+k-1]
	_ = b[3*ldb+k-1]
	_ = c[2*ldc+3]
	sdotKernel3x4(k, &a[0], lda, &b[0], ldb, &c[0], ldc, alpha, beta)
}

// avx2DdotTile is the float64 dotKernel for 3 rows of A against 4 rows of B.
func avx2DdotTile(k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int, alpha, beta float64) {
	_ = a[2*lda+k-1]
	_ = b[3*ldb+k-1]
	_ = c[2*ldc+3]
	ddotKernel3x4(k, &a[0], lda, &b[0], ldb, &c[0], ldc, alpha, beta)
}

// avx512SdotTile is the dotKernel for 4 rows of A against 4 rows of B.
func avx512SdotTile(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32) {
	_ = a[3*lda+k-1]
	_ = b[3*ldb+k-1]
	_ = c[3*ldc+3]
	sdotKernel4x4AVX512(k, &a[0], lda, &b[0], ldb, &c[0], ldc, alpha, beta)
}

// streamAsm is the dotStreamKernel that checks its slices' bounds and
// runs the assembly kernel f.
func streamAsm[A, B any](f func(k int, a *A, b0, b1 *B, rows, ldb int, c0, c1 *float32, alpha, beta float32)) dotStreamKernel[A, B, float32] {
	return func(k int, a []A, b0, b1 []B, rows, ldb int, c0, c1 []float32, alpha, beta float32) {
		_, _ = a[k-1], c0[rows-1]
		_, _ = b0[(rows-1)*ldb+k-1], b1[(rows-1)*ldb+k-1]
		_ = c1[rows-1]
		f(k, &a[0], &b0[0], &b1[0], rows, ldb, &c0[0], &c1[0], alpha, beta)
	}
}

func avx2Sdot(x, y []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	return sdotAVX2(&x[0], &y[:len(x)][0], len(x))
}

func avx2Ddot(x, y []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	return ddotAVX2(&x[0], &y[:len(x)][0], len(x))
}

func avx2Saxpy(alpha float32, x, y []float32) {
	if len(x) == 0 {
		return
	}
	saxpyAVX2(alpha, &x[0], &y[:len(x)][0], len(x))
}

func avx2Daxpy(alpha float64, x, y []float64) {
	if len(x) == 0 {
		return
	}
	daxpyAVX2(alpha, &x[0], &y[:len(x)][0], len(x))
}

// The assembly implementations; init installs those the CPU runs. The
// thresholds were set with BenchmarkSgemmTuning on the engine's shapes.
var (
	avx2SgemmImpl = &gemmImpl[float32]{
		name: "avx2-6x16", mr: 6, nr: 16, kernel: avx2Sgemm,
		kc: 256, mc: 96, chunk: 16,
		packBMinRows: 24, packAMinPanels: never, packATransMinPanels: 1,
		dot:      &dotImpl[float32]{mr: 3, nr: 4, kernel: avx2SdotTile, stream: streamAsm(sdotStream2AVX2), maxRows: 24, chunk: 16},
		swapMaxN: 16,
		pool:     new(sync.Pool),
	}
	avx2DgemmImpl = &gemmImpl[float64]{
		name: "avx2-6x8", mr: 6, nr: 8, kernel: avx2Dgemm,
		kc: 256, mc: 96, chunk: 32,
		packBMinRows: 24, packAMinPanels: never, packATransMinPanels: 1,
		dot:      &dotImpl[float64]{mr: 3, nr: 4, kernel: avx2DdotTile, maxRows: 24, chunk: 16},
		swapMaxN: 8,
		pool:     new(sync.Pool),
	}
	avx512SgemmImpl = &gemmImpl[float32]{
		name: "avx512-12x32", mr: 12, nr: 32, kernel: avx512Sgemm,
		kc: 256, mc: 96, chunk: 8,
		packBMinRows: 24, packAMinPanels: never, packATransMinPanels: 1,
		dot:    &dotImpl[float32]{mr: 4, nr: 4, kernel: avx512SdotTile, stream: streamAsm(sdotStream2AVX512), maxRows: avx512DotRows, chunk: 16},
		narrow: avx2SgemmImpl, narrowMaxN: 16, swapMaxN: 16,
		pool: new(sync.Pool),
	}
	avx512DgemmImpl = &gemmImpl[float64]{
		name: "avx512-12x16", mr: 12, nr: 16, kernel: avx512Dgemm,
		kc: 256, mc: 96, chunk: 16,
		packBMinRows: 24, packAMinPanels: never, packATransMinPanels: 1,
		dot:    avx2DgemmImpl.dot,
		narrow: avx2DgemmImpl, narrowMaxN: 8, swapMaxN: 8,
		pool: new(sync.Pool),
	}
)

var (
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F
)

// init picks the widest kernels the CPU runs, unless TANDEM_KERNELS asks for
// "purego" or "avx2".
func init() {
	if !hasAVX2 || asmDisabled() {
		return
	}
	sgemmImpl, dgemmImpl = avx2SgemmImpl, avx2DgemmImpl
	copyRows = copyRowsAVX
	transpose8x8 = avxTranspose8x8
	sdotImpl, ddotImpl = avx2Sdot, avx2Ddot
	saxpyImpl, daxpyImpl = avx2Saxpy, avx2Daxpy
	if hasAVX512 && os.Getenv(EnvKernels) != "avx2" {
		sgemmImpl, dgemmImpl = avx512SgemmImpl, avx512DgemmImpl
	}
}

// asmSgemmImpls lists the assembly float32 implementations this CPU runs.
func asmSgemmImpls() []*gemmImpl[float32] {
	switch {
	case hasAVX512:
		return []*gemmImpl[float32]{avx2SgemmImpl, avx512SgemmImpl}
	case hasAVX2:
		return []*gemmImpl[float32]{avx2SgemmImpl}
	}
	return nil
}

// asmDgemmImpls lists the assembly float64 implementations this CPU runs.
func asmDgemmImpls() []*gemmImpl[float64] {
	switch {
	case hasAVX512:
		return []*gemmImpl[float64]{avx2DgemmImpl, avx512DgemmImpl}
	case hasAVX2:
		return []*gemmImpl[float64]{avx2DgemmImpl}
	}
	return nil
}

// avx512DotRows is the most rows of A the AVX-512 float32 dot route takes
// (products with n <= 16 take the AVX2 tile's routes, whose dot route
// takes 24).
// Its 4×4 tiles hold B's four rows in L1 while A's rows stream from L2, so
// with B read in place and not packed it beats the packed route up to
// about 128 rows of Qwen3-0.6B's 3072×1024 projection on AMD's Zen 5
// (2 threads, GFLOP/s dot / packed: 64 rows 320-351 / 232-257, 96 rows
// 340-341 / 308-324, 128 rows 318-335 / 303-318, 256 rows 292-320 /
// 353-369).
const avx512DotRows = 96
