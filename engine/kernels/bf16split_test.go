package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// bitPatterns returns n float32s of random bits, led, when n > 100, by
// the special values: zeros of both signs, infinities, NaNs of both signs
// (quiet and signalling), denormals, ties to even both ways, the largest
// finite values (which round to infinity) and 1's predecessor.
func bitPatterns(rng *rand.Rand, n int) []float32 {
	special := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00001, 0xffa00000, 0x7f800001, 0x00000001, 0x807fffff,
		0x3f808000, 0x3f818000, 0x3f808001, 0x7f7fffff, 0xff7fffff, 0x3f7fffff}
	x := make([]float32, n)
	for i := range x {
		if i < len(special) && n > 100 {
			x[i] = math.Float32frombits(special[i])
		} else {
			x[i] = math.Float32frombits(rng.Uint32())
		}
	}
	return x
}

// TestSplitRowMatchesSplitBF16: the vector split equals splitBF16 bit for
// bit over random bit patterns (NaNs, infinities, denormals, zeros of both
// signs, ties) and over lengths around its 16-element groups.
func TestSplitRowMatchesSplitBF16(t *testing.T) {
	t.Parallel()
	if splitRow == nil {
		t.Skip("no AVX-512 split on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{1, 15, 16, 17, 33, 1000, 4096} {
		x := bitPatterns(rng, n)
		hi, lo := make([]BF16, n), make([]BF16, n)
		splitRow(hi, lo, x)
		for i, v := range x {
			wh, wl := splitBF16(v)
			require.Equal(t, wh, hi[i], "hi of %#x (n=%d, i=%d)", math.Float32bits(v), n, i)
			require.Equal(t, wl, lo[i], "lo of %#x (n=%d, i=%d)", math.Float32bits(v), n, i)
		}
	}
}

// TestRoundRowMatchesToBF16: the vector rounding (RoundBF16 and the packed
// route's A) equals ToBF16 bit for bit over random bit patterns and the
// special values (NaNs of both signs, infinities, denormals, ties to even
// both ways, the largest finite float32, which rounds to infinity) and
// over lengths around its 16-element groups, writing nothing past the end.
func TestRoundRowMatchesToBF16(t *testing.T) {
	t.Parallel()
	if roundRow == nil {
		t.Skip("no AVX-512 rounding on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 33, 1000, 4096} {
		x := bitPatterns(rng, n)
		dst := make([]BF16, n+1)
		dst[n] = 42
		roundRow(dst[:n], x)
		for i, v := range x {
			require.Equal(t, ToBF16(v), dst[i], "%#x (n=%d, i=%d)", math.Float32bits(v), n, i)
		}
		require.Equal(t, BF16(42), dst[n], "n=%d: nothing written past the end", n)
	}
}

// TestWidenRowMatchesFloat32: the vector widening equals BF16.Float32 bit
// for bit over random bit patterns (NaNs included) and over lengths around
// its 8- and 32-element groups, writing nothing past the end.
func TestWidenRowMatchesFloat32(t *testing.T) {
	t.Parallel()
	if widenRow == nil {
		t.Skip("no AVX2 widening on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 63, 65, 1000} {
		src := make([]BF16, n)
		for i := range src {
			src[i] = BF16(rng.Uint32())
		}
		dst := make([]float32, n+1)
		dst[n] = 42
		widenRow(dst[:n], src)
		for i, b := range src {
			require.Equal(t, math.Float32bits(b.Float32()), math.Float32bits(dst[i]), "%#x (n=%d, i=%d)", uint16(b), n, i)
		}
		require.Equal(t, float32(42), dst[n], "n=%d: nothing written past the end", n)
	}
}
