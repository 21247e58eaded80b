//go:build amd64 && !purego

package kernels

import (
	"os"

	"golang.org/x/sys/cpu"
)

//go:noescape
func bdotKernel4x4(k int, a *BF16, lda int, b *BF16, ldb int, c *float32, ldc int, alpha, beta float32)

//go:noescape
func bdotStream2(k int, a *BF16, b0 *BF16, b1 *BF16, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)

//go:noescape
func bwdotKernel4x4AVX512(k int, a *float32, lda int, b *BF16, ldb int, c *float32, ldc int, alpha float32, beta float32)

//go:noescape
func bwdotStream2AVX512(k int, a *float32, b0 *BF16, b1 *BF16, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)

//go:noescape
func bwdotStream2AVX2(k int, a *float32, b0 *BF16, b1 *BF16, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)

//go:noescape
func bwdotKernel3x4AVX2(k int, a *float32, lda int, b *BF16, ldb int, c *float32, ldc int, alpha float32, beta float32)

//go:noescape
func bgemmKernel12x32(kp int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha, beta float32)

//go:noescape
func splitBF16AVX512(hi, lo *BF16, x *float32, n int)

//go:noescape
func roundBF16AVX512(dst *BF16, x *float32, n int)

//go:noescape
func interleaveBF16AVX2(dst *uint32, even, odd *BF16, n int)

//go:noescape
func widenBF16AVX2(dst *float32, src *BF16, n int)

// hasAVX512BF16: VDPBF16PS, and AVX512BW for the masked 16-bit loads.
var hasAVX512BF16 = hasAVX512 && cpu.X86.HasAVX512BF16 && cpu.X86.HasAVX512BW

func init() {
	if hasAVX2 && !asmDisabled() {
		widenRow = func(dst []float32, src []BF16) {
			n := len(src) / 8 * 8
			if n > 0 {
				_ = dst[n-1]
				widenBF16AVX2(&dst[0], &src[0], n)
			}
			for i := n; i < len(src); i++ {
				dst[i] = src[i].Float32()
			}
		}
	}
	if hasAVX512 && !asmDisabled() {
		roundRow = func(dst []BF16, x []float32) {
			n := len(x) / 16 * 16
			if n > 0 {
				_ = dst[n-1]
				roundBF16AVX512(&dst[0], &x[0], n)
			}
			for i := n; i < len(x); i++ {
				dst[i] = ToBF16(x[i])
			}
		}
	}
	if hasAVX2 && !asmDisabled() {
		bf16Dots = append(bf16Dots, wideDot("avx2", avx2SgemmImpl, bwdotKernel3x4AVX2, bwdotStream2AVX2, &bf16EdgePool))
	}
	if hasAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && !asmDisabled() {
		bf16Dots = append(bf16Dots, wideDot("avx512", avx512SgemmImpl, bwdotKernel4x4AVX512, bwdotStream2AVX512, &bf16EdgePool))
	}
	if !hasAVX512BF16 || asmDisabled() || os.Getenv(EnvKernels) == "avx2" {
		return
	}
	splitRow = func(hi, lo []BF16, x []float32) {
		n := len(x) / 16 * 16
		if n > 0 {
			_, _ = hi[n-1], lo[n-1]
			splitBF16AVX512(&hi[0], &lo[0], &x[0], n)
		}
		for i := n; i < len(x); i++ {
			hi[i], lo[i] = splitBF16(x[i])
		}
	}
	interleaveBF16 = func(dst []uint32, even, odd []BF16) {
		n := len(dst) / 16 * 16
		if n > 0 {
			_, _ = even[n-1], odd[n-1]
			interleaveBF16AVX2(&dst[0], &even[0], &odd[0], n)
		}
		for j := n; j < len(dst); j++ {
			dst[j] = uint32(even[j]) | uint32(odd[j])<<16
		}
	}
	bf16Round = &bf16Kernels{
		dot: func(k int, a []BF16, lda int, b []BF16, ldb int, c []float32, ldc int, alpha, beta float32) {
			_, _, _ = a[3*lda+k-1], b[3*ldb+k-1], c[3*ldc+3]
			bdotKernel4x4(k, &a[0], lda, &b[0], ldb, &c[0], ldc, alpha, beta)
		},
		stream: streamAsm(bdotStream2),
		gemm: func(kp int, a []BF16, lda int, b []BF16, c []float32, ldc int, alpha, beta float32) {
			_, _, _ = a[(bgMR-1)*lda+kp*2-1], b[kp*bgNR*2-1], c[(bgMR-1)*ldc+bgNR-1]
			bgemmKernel12x32(kp, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
		},
	}
}
