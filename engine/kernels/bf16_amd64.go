//go:build amd64 && !purego

package kernels

import (
	"os"

	"golang.org/x/sys/cpu"
)

//go:noescape
func bdotKernel4x4(k int, a *BF16, lda int, b *BF16, ldb int, c *float32, ldc int, alpha, beta float32)

func bdotKernel4x4Go(k int, a []BF16, lda int, b []BF16, ldb int, c []float32, ldc int, alpha, beta float32) {
	bdotKernel4x4(k, &a[0], lda, &b[0], ldb, &c[0], ldc, alpha, beta)
}

//go:noescape
func bdotKernel1x8(k int, a, b *BF16, ldb int, c *float32, alpha, beta float32)

func bdotKernel1x8Go(k int, a, b []BF16, ldb int, c []float32, alpha, beta float32) {
	bdotKernel1x8(k, &a[0], &b[0], ldb, &c[0], alpha, beta)
}

//go:noescape
func bgemmKernel12x32(kp int, a, b *BF16, c *float32, ldc int, alpha, beta float32)

func bgemmKernel12x32Go(kp int, a, b []BF16, c []float32, ldc int, alpha, beta float32) {
	bgemmKernel12x32(kp, &a[0], &b[0], &c[0], ldc, alpha, beta)
}

// hasAVX512BF16: VDPBF16PS, and AVX512BW for the masked 16-bit loads.
var hasAVX512BF16 = hasAVX512 && cpu.X86.HasAVX512BF16 && cpu.X86.HasAVX512BW

func init() {
	if !hasAVX512BF16 || asmDisabled() || os.Getenv(EnvKernels) == "avx2" {
		return
	}
	bf16Dot, bf16Dot1, bf16Gemm = bdotKernel4x4Go, bdotKernel1x8Go, bgemmKernel12x32Go
}
