package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSplitRowMatchesSplitBF16: the vector split equals splitBF16 bit for
// bit over random bit patterns (NaNs, infinities, denormals, zeros of both
// signs, ties) and over lengths around its 16-element groups.
func TestSplitRowMatchesSplitBF16(t *testing.T) {
	t.Parallel()
	if splitRow == nil {
		t.Skip("no AVX-512 split on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	special := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00001, 0xffa00000, 0x00000001, 0x807fffff,
		0x3f808000, 0x3f818000, 0x7f7fffff, 0x3f7fffff}
	for _, n := range []int{1, 15, 16, 17, 33, 1000, 4096} {
		x := make([]float32, n)
		for i := range x {
			if i < len(special) && n > 100 {
				x[i] = math.Float32frombits(special[i])
			} else {
				x[i] = math.Float32frombits(rng.Uint32())
			}
		}
		hi, lo := make([]BF16, n), make([]BF16, n)
		splitRow(hi, lo, x)
		for i, v := range x {
			wh, wl := splitBF16(v)
			require.Equal(t, wh, hi[i], "hi of %#x (n=%d, i=%d)", math.Float32bits(v), n, i)
			require.Equal(t, wl, lo[i], "lo of %#x (n=%d, i=%d)", math.Float32bits(v), n, i)
		}
	}
}
