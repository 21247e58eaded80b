package kernels

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// evexVDPBF16PS is the EVEX encoding of VDPBF16PS dst, src1, src2 for
// 512-bit registers (EVEX.512.F3.0F38.W0 52 /r, register form, no mask):
// the inverted register-extension bits R, X, B, R' and V', the inverted
// src1 in vvvv, pp = F3, mm = 0F38, L'L = 512.
func evexVDPBF16PS(dst, src1, src2 int) []byte {
	inv := func(bit int) byte { return byte(^bit & 1) }
	p0 := inv(dst>>3)<<7 | inv(src2>>4)<<6 | inv(src2>>3)<<5 | inv(dst>>4)<<4 | 0b10
	p1 := byte(^src1&0xF)<<3 | 1<<2 | 0b10
	p2 := byte(0b10)<<5 | inv(src1>>4)<<3
	modrm := byte(0xC0) | byte(dst&7)<<3 | byte(src2&7)
	return []byte{0x62, p0, p1, p2, 0x52, modrm}
}

// TestBF16Encodings: every VDPBF16PS written as bytes in the assembly
// files carries, in its comment, the instruction in Go operand order
// (src2, src1, dst); the bytes are its encoding. The encoder itself is
// checked on instructions whose bytes GNU objdump decodes as
// "vdpbf16ps %zmm2,%zmm1,%zmm0" and "vdpbf16ps %zmm12,%zmm17,%zmm9".
func TestBF16Encodings(t *testing.T) {
	t.Parallel()
	require.Equal(t, []byte{0x62, 0xf2, 0x76, 0x48, 0x52, 0xc2}, evexVDPBF16PS(0, 1, 2))
	require.Equal(t, []byte{0x62, 0x52, 0x76, 0x40, 0x52, 0xcc}, evexVDPBF16PS(9, 17, 12))
	line := regexp.MustCompile(`^\s*((?:BYTE \$0x[0-9a-f]{2};?\s*)+)// VDPBF16PS Z(\d+), Z(\d+), Z(\d+)$`)
	files, err := filepath.Glob("bf16*_amd64.s")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	seen := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for n, l := range strings.Split(string(src), "\n") {
			if !strings.Contains(l, "BYTE") {
				continue
			}
			m := line.FindStringSubmatch(l)
			require.NotNil(t, m, "%s:%d: a BYTE line that is not a commented VDPBF16PS: %q", f, n+1, l)
			reg := func(s string) int { v, _ := strconv.Atoi(s); return v }
			src2, src1, dst := reg(m[2]), reg(m[3]), reg(m[4])
			var got []byte
			for _, b := range strings.Split(m[1], ";") {
				b = strings.TrimSpace(b)
				if b == "" {
					continue
				}
				v, err := strconv.ParseUint(strings.TrimPrefix(b, "BYTE $0x"), 16, 8)
				require.NoError(t, err)
				got = append(got, byte(v))
			}
			require.Equal(t, evexVDPBF16PS(dst, src1, src2), got, "%s:%d: %s", f, n+1, fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", src2, src1, dst))
			seen++
		}
	}
	require.Equal(t, 2*(16+2)+24, seen, "VDPBF16PS lines: the dot kernels' bodies and tails (4×4: 16, two streams: 2), the packed kernel (24)")
}
