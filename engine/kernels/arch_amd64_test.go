//go:build amd64 && !purego

package kernels

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/cpu"
)

// TestImplementationSelection checks that init picked the widest kernels the
// CPU runs, or the ones TANDEM_KERNELS asked for.
func TestImplementationSelection(t *testing.T) {
	t.Parallel()
	want := goSgemm.name
	switch env := os.Getenv(EnvKernels); {
	case env == "purego" || !hasAVX2:
	case hasAVX512 && env != "avx2":
		want = avx512SgemmImpl.name
	default:
		want = avx2SgemmImpl.name
	}
	assert.Equal(t, want, Implementation())
	t.Logf("kernels in use: %s (AVX2+FMA %t, AVX-512F %t)", Implementation(), hasAVX2, hasAVX512)

	// SgemmF16's sampling step reads half-precision weights in place where
	// the AVX-512 float32 kernels run and the CPU converts halves (F16C)
	// and masks 16-bit loads (AVX512BW, AVX512VL).
	wantF16 := "widen"
	if want == avx512SgemmImpl.name && cpu.X86.HasF16C && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL {
		wantF16 = "avx512"
	}
	assert.Equal(t, wantF16, F16Implementation())
}
