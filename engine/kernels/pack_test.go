package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPackBPanel checks panel packing of B, plain and transposed (where the
// transposed float32 case runs on 8×8 vector transposes when the CPU has
// them), against the definition, zero padding included.
func TestPackBPanel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 42))
	for _, tB := range []bool{false, true} {
		for _, nr := range []int{4, 16, 32} {
			for _, nb := range []int{1, 7, 8, 9, 16, nr} {
				if nb > nr {
					continue
				}
				for _, kb := range []int{1, 7, 8, 9, 31, 64} {
					pc, j0 := 3, 5
					rows, cols := pc+kb, j0+nb // op(B) is rows×cols
					if tB {
						rows, cols = cols, rows
					}
					ldb := cols + 2
					b := randMatrix[float32](rng, rows, cols, ldb)
					dst := make([]float32, kb*nr)
					for i := range dst {
						dst[i] = -1 // must all be overwritten
					}
					packBPanel(tB, b, ldb, pc, kb, j0, nb, nr, dst)
					for p := range kb {
						for jj := range nr {
							var want float32
							switch {
							case jj >= nb:
							case tB:
								want = b[(j0+jj)*ldb+pc+p]
							default:
								want = b[(pc+p)*ldb+j0+jj]
							}
							require.Equal(t, want, dst[p*nr+jj], "tB=%t nr=%d nb=%d kb=%d: element (%d, %d)", tB, nr, nb, kb, p, jj)
						}
					}
				}
			}
		}
	}
}

// TestPackAPanel checks micro-panel packing of A, plain and transposed
// (where full panels of 24, 48 or 96 bytes a depth step, here float32 panels
// of 6 and 12 rows, are copied by copyRows when the CPU has AVX), against
// the definition, zero padding included.
func TestPackAPanel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(43, 44))
	for _, tA := range []bool{false, true} {
		for _, mr := range []int{4, 6, 8, 12, 16} {
			for _, mi := range []int{1, 3, mr - 1, mr} {
				if mi < 1 || mi > mr {
					continue
				}
				for _, kb := range []int{1, 7, 8, 9, 31, 64} {
					pc, i0 := 3, 5
					rows, cols := i0+mi, pc+kb // op(A) is rows×cols
					if tA {
						rows, cols = cols, rows
					}
					lda := cols + 2
					a := randMatrix[float32](rng, rows, cols, lda)
					dst := make([]float32, kb*mr)
					for i := range dst {
						dst[i] = -1 // must all be overwritten
					}
					packAPanel(tA, a, lda, i0, mi, pc, kb, mr, dst)
					for p := range kb {
						for ii := range mr {
							var want float32
							switch {
							case ii >= mi:
							case tA:
								want = a[(pc+p)*lda+i0+ii]
							default:
								want = a[(i0+ii)*lda+pc+p]
							}
							require.Equal(t, want, dst[p*mr+ii], "tA=%t mr=%d mi=%d kb=%d: element (%d, %d)", tA, mr, mi, kb, p, ii)
						}
					}
				}
			}
		}
	}
}
