// Package blascore picks the OpenBLAS core a benchmark's reference runs
// on. An OpenBLAS older than the CPU may not know it and pick a core
// without AVX-512 (0.3.21 picks Prescott, SSE3, on an Emerald Rapids Xeon,
// and a generic core on AMD's Zen 5); the benchmarks then force OpenBLAS's
// AVX-512 core, so that the engine is compared with OpenBLAS's best
// kernels for the machine, and print both names.
package blascore

import (
	"os/exec"
	"strings"

	"golang.org/x/sys/cpu"
)

// avx512Cores are the names OpenBLAS (0.3.21) gives its AVX-512 cores.
var avx512Cores = map[string]bool{"SkylakeX": true, "Cooperlake": true, "SapphireRapids": true}

// Force is the core to set in OPENBLAS_CORETYPE when OpenBLAS picked
// detected on a CPU with AVX-512F (and AVX512_BF16 when hasBF16), "" when
// its pick stands: an AVX-512 core, a CPU without AVX-512, or a BLAS that
// is not OpenBLAS ("").
func Force(detected string, hasAVX512, hasBF16 bool) string {
	switch {
	case detected == "" || !hasAVX512 || avx512Cores[detected]:
		return ""
	case hasBF16:
		return "Cooperlake"
	}
	return "SkylakeX"
}

// ForceHere is Force for this machine's CPU.
func ForceHere(detected string) string {
	return Force(detected, cpu.X86.HasAVX512F, cpu.X86.HasAVX512BF16)
}

// Detected is the core OpenBLAS picks for python's libblas.so.3 under env
// (OPENBLAS_CORETYPE unset), "" when that library is not OpenBLAS or
// python cannot load it.
func Detected(python string, env []string) string {
	const probe = "import ctypes\nf = ctypes.CDLL('libblas.so.3').openblas_get_corename\nf.restype = ctypes.c_char_p\nprint(f().decode())"
	cmd := exec.Command(python, "-c", probe)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
