//go:build amd64 && !purego

package kernels

import (
	"sync"

	"golang.org/x/sys/cpu"
)

//go:noescape
func widenF16F16C(dst *float32, src *F16, n int)

func init() {
	if !hasAVX2 || !cpu.X86.HasF16C || asmDisabled() {
		return
	}
	widenF16Row = func(dst []float32, src []F16) {
		n := len(src) / 8 * 8
		if n > 0 {
			_ = dst[n-1]
			widenF16F16C(&dst[0], &src[0], n)
		}
		for i := n; i < len(src); i++ {
			dst[i] = src[i].Float32()
		}
	}
}

//go:noescape
func hdotKernel4x4AVX512(k int, a *float32, lda int, b *F16, ldb int, c *float32, ldc int, alpha float32, beta float32)

//go:noescape
func hdotStream2AVX512(k int, a *float32, b0 *F16, b1 *F16, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)

//go:noescape
func hdotStream2AVX2(k int, a *float32, b0 *F16, b1 *F16, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)

//go:noescape
func hdotKernel3x4AVX2(k int, a *float32, lda int, b *F16, ldb int, c *float32, ldc int, alpha float32, beta float32)

func init() {
	if !hasAVX2 || !cpu.X86.HasF16C || asmDisabled() {
		return
	}
	f16Dots = append(f16Dots, wideDot("avx2", avx2SgemmImpl, hdotKernel3x4AVX2, hdotStream2AVX2, &f16EdgePool))
	if hasAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL {
		f16Dots = append(f16Dots, wideDot("avx512", avx512SgemmImpl, hdotKernel4x4AVX512, hdotStream2AVX512, &f16EdgePool))
	}
}

// wideDot is im's dot route with B stored in 16 bits (type W), computed
// by kernel (tiles of im.dot's shape: widedot_amd64.h's 4×4 for AVX-512,
// widedot2_amd64.h's 3×4 for AVX2) and stream (one row against two runs
// of rows, read as two streams: the 1-row products), B's last partial
// tile padded through edges.
func wideDot[W F16 | BF16](name string, im *gemmImpl[float32], kernel func(k int, a *float32, lda int, b *W, ldb int, c *float32, ldc int, alpha, beta float32),
	stream func(k int, a *float32, b0, b1 *W, rows, ldb int, c0, c1 *float32, alpha, beta float32), edges *sync.Pool) wideRoute[W] {
	d := im.dot
	mr, nr := d.mr, d.nr
	return wideRoute[W]{name: name, im: im, d: &dotImplOf[float32, W]{
		mr: mr, nr: nr, maxRows: d.maxRows, chunk: d.chunk,
		kernel: func(k int, a []float32, lda int, b []W, ldb int, c []float32, ldc int, alpha, beta float32) {
			_, _, _ = a[(mr-1)*lda+k-1], b[(nr-1)*ldb+k-1], c[(mr-1)*ldc+nr-1]
			kernel(k, &a[0], lda, &b[0], ldb, &c[0], ldc, alpha, beta)
		},
		stream: streamAsm(stream),
		edges:  edges,
	}}
}
