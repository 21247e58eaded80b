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
func hdotKernel1x8AVX512(k int, a *float32, b *F16, ldb int, c *float32, alpha float32, beta float32)

func init() {
	if !hasAVX512 || !cpu.X86.HasAVX512BW || !cpu.X86.HasAVX512VL || asmDisabled() {
		return
	}
	wideDotImpl = avx512SgemmImpl
	if cpu.X86.HasF16C {
		f16Dot = wideDot(hdotKernel4x4AVX512, hdotKernel1x8AVX512, &f16EdgePool)
	}
}

// wideDot is avx512SgemmImpl's dot route with B stored in 16 bits (type
// W), computed by kernel (4×4 tiles) and row (one row against eight) of
// widedot_amd64.h, B's last partial tile padded through edges.
func wideDot[W F16 | BF16](kernel func(k int, a *float32, lda int, b *W, ldb int, c *float32, ldc int, alpha, beta float32),
	row func(k int, a *float32, b *W, ldb int, c *float32, alpha, beta float32), edges *sync.Pool) *dotImplOf[float32, W] {
	d := avx512SgemmImpl.dot
	return &dotImplOf[float32, W]{
		mr: d.mr, nr: d.nr, maxRows: d.maxRows, chunk: d.chunk,
		kernel: func(k int, a []float32, lda int, b []W, ldb int, c []float32, ldc int, alpha, beta float32) {
			_, _, _ = a[3*lda+k-1], b[3*ldb+k-1], c[3*ldc+3]
			kernel(k, &a[0], lda, &b[0], ldb, &c[0], ldc, alpha, beta)
		},
		row: func(k int, a []float32, b []W, ldb int, c []float32, alpha, beta float32) {
			_, _, _ = a[k-1], b[7*ldb+k-1], c[7]
			row(k, &a[0], &b[0], ldb, &c[0], alpha, beta)
		},
		edges: edges,
	}
}
