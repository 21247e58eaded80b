package kernels

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestAliasedRows(t *testing.T) {
	t.Parallel()
	require.True(t, aliasedRows(4096, 12), "12 rows 4 KiB apart share one set")
	require.True(t, aliasedRows(12288, 6), "a width of 3072 float32")
	require.True(t, aliasedRows(2048, 12), "six rows in each of two sets")
	require.False(t, aliasedRows(4096+64, 12), "one line further each row")
	require.False(t, aliasedRows(4096, 4), "four rows fit a set's ways")
	require.False(t, aliasedRows(576*4, 12), "SmolLM2's width")
	for _, k := range []int{1, 15, 16, 1008, 1024, 2032, 3072} {
		st := unaliasedStride[float32](k, 12)
		require.False(t, aliasedRows(st*4, 12), "k=%d: stride %d", k, st)
		require.True(t, st >= k && st%16 == 0 && st <= k+64, "k=%d: stride %d", k, st)
	}
}

// TestSgemmAliasedRowsCopied: a product whose rows of A lie a multiple of
// 4 KiB apart (A copied to rows further apart by alignedGemm)
// gives exactly the result of the same values a little further apart (read
// in place): partial row blocks, several depth passes, beta ≠ 0, on every
// implementation and thread count. Padding between rows is NaN, so a copy
// that reads past a row poisons the result.
func TestSgemmAliasedRowsCopied(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, im := range sgemmImpls() {
		checkAliasedRowsCopied(t, rng, im)
	}
	for _, im := range dgemmImpls() {
		checkAliasedRowsCopied(t, rng, im)
	}
}

func checkAliasedRowsCopied[T float](t *testing.T, rng *rand.Rand, im *gemmImpl[T]) {
	var zero T
	width := 4096 / int(unsafe.Sizeof(zero)) // elements in 4 KiB
	for _, s := range []shape{{m: 37, n: alignMinCols + 3, k: 300}, {tB: true, m: 150, n: alignMinCols, k: 600}, {m: 13, n: alignMinCols + 33, k: 17}} {
		lda := ((s.k + width - 1) / width) * width
		if !aliasedRows(lda*int(unsafe.Sizeof(zero)), im.mr) {
			continue // a tile of few rows: read in place either way
		}
		s.padA = lda - s.k
		alias := newOperands[T](rng, s)
		s.padA++
		inPlace := newOperands[T](rng, s)
		for i := range s.m {
			copy(inPlace.a[i*inPlace.lda:][:s.k], alias.a[i*alias.lda:][:s.k])
		}
		for _, th := range []int{1, 2, 3} {
			want := append([]T(nil), alias.c...)
			got := append([]T(nil), alias.c...)
			gemm(im, Par{Threads: th}, false, s.tB, s.m, s.n, s.k, 0.5, inPlace.a, inPlace.lda, alias.b, alias.ldb, 0.25, want, alias.ldc)
			gemm(im, Par{Threads: th}, false, s.tB, s.m, s.n, s.k, 0.5, alias.a, alias.lda, alias.b, alias.ldb, 0.25, got, alias.ldc)
			require.Equal(t, want, got, "%s %+v threads %d: rows of A %d apart differ from %d apart", im.name, s, th, alias.lda, inPlace.lda)
		}
	}
}
