//go:build amd64 && !purego

package kernels

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func amxTiles32(cfg *byte, ks int, a *BF16, lda int, b *BF16, pairs int, s *float32)

//go:noescape
func amxDot32(cfg *byte, ks int, w *BF16, ldw int, x *BF16, blocks int, s *float32)

//go:noescape
func amxDot32n(cfg *byte, ks int, w *BF16, ldw int, x *BF16, blocks int, s *float32)

//go:noescape
func amxDotStore(c *float32, ldc int, s *float32, lo int, rows, cols int, alpha, beta float32)

//go:noescape
func amxStore(c *float32, ldc int, s *float32, lds int, rows, cols int, alpha, beta float32)

// amxConfig is the tile configuration amxTiles32 loads: palette 1, tiles
// 0-7 of 16 rows by 64 bytes (bytes 16-47 hold each tile's bytes per row,
// 48-63 its rows).
var amxConfig = func() (cfg [64]byte) {
	cfg[0] = 1
	for t := range 8 {
		cfg[16+2*t] = 64
		cfg[48+t] = 16
	}
	return cfg
}()

// amxPermitted asks Linux for the process's use of the AMX tile data
// (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): without it the
// first tile instruction faults. It fails on kernels before 5.16 and where
// the hypervisor does not pass AMX through.
func amxPermitted() bool {
	const archReqXcompPerm, xfeatureXtileData = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtileData, 0)
	return errno == 0
}

func init() {
	if !hasAVX512BF16 || asmDisabled() || os.Getenv(EnvKernels) == "avx2" || !cpu.X86.HasAMXTile || !cpu.X86.HasAMXBF16 || os.Getenv(EnvKernels) == "avx512" || !amxPermitted() {
		return
	}
	amx = &amxKernels{
		tiles: func(ks int, a []BF16, lda int, b []BF16, pairs int, s []float32) {
			_, _, _ = a[(2*amxMR-1)*lda+ks*amxKS-1], b[pairs*ks*amxKS*amxNR-1], s[amxMR*pairs*amxNR-1]
			amxTiles32(&amxConfig[0], ks, unsafe.SliceData(a), lda, unsafe.SliceData(b), pairs, unsafe.SliceData(s))
		},
		store: func(c []float32, ldc int, s []float32, lds, rows, cols int, alpha, beta float32) {
			_, _ = c[(rows-1)*ldc+cols-1], s[(rows-1)*lds+cols-1]
			amxStore(unsafe.SliceData(c), ldc, unsafe.SliceData(s), lds, rows, cols, alpha, beta)
		},
		dot: func(narrow bool, ks int, w []BF16, ldw int, x []BF16, blocks int, s []float32) {
			if narrow {
				_, _, _ = w[(blocks*amxMR-1)*ldw+ks*amxKS-1], x[ks*amxKS*16-1], s[blocks*amxMR*16-1]
				amxDot32n(&amxConfig[0], ks, unsafe.SliceData(w), ldw, unsafe.SliceData(x), blocks, unsafe.SliceData(s))
				return
			}
			_, _, _ = w[(blocks*amxMR-1)*ldw+ks*amxKS-1], x[2*ks*amxKS*16-1], s[blocks*amxMR*32-1]
			amxDot32(&amxConfig[0], ks, unsafe.SliceData(w), ldw, unsafe.SliceData(x), blocks, unsafe.SliceData(s))
		},
		dotStore: func(c []float32, ldc int, s []float32, lo, rows, cols int, alpha, beta float32) {
			last := lo + rows - 1 + 15*16 // the last gathered element
			if cols > 16 {
				last += 16 * 16
			}
			_, _ = c[(rows-1)*ldc+cols-1], s[last]
			amxDotStore(unsafe.SliceData(c), ldc, unsafe.SliceData(s), lo, rows, cols, alpha, beta)
		},
	}
}
