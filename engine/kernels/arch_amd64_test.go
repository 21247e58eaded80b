//go:build amd64 && !purego

package kernels

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
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
}
