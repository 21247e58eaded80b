package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAMXRouteAgainstReference: SgemmBF16's AMX route, on shapes that
// cut C into several work items with partial panels, blocks and depth
// steps, padded strides, alpha and beta, against float64 arithmetic on
// the same inputs, bit-identical for every thread count and, on the dot
// route, for a row computed alone.
func TestAMXRouteAgainstReference(t *testing.T) {
	if amx == nil {
		t.Skip("no AMX-BF16 on this CPU or OS (or TANDEM_KERNELS asks for another implementation)")
	}
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, s := range []struct {
		transB  bool
		m, n, k int
	}{
		{true, 17, 1, 1}, {true, 31, 33, 31}, {false, 33, 32, 33}, {true, 70, 2100, 1100},
		{false, 65, 700, 1500}, {true, 200, 129, 64}, {false, 17, 3000, 40},
		// Several depth passes (amxKC = 2048), the last partial.
		{false, 40, 70, 4500}, {true, 33, 50, 4097},
		// The dot route's (m <= 16, k a multiple of 32).
		{true, 1, 70, 64}, {true, 5, 33, 96}, {true, 8, 40, 64}, {true, 16, 1000, 1024}, {true, 9, 4100, 32},
	} {
		for _, ab := range [][2]float32{{1, 0}, {-0.5, 1}, {2, 0.25}} {
			alpha, beta := ab[0], ab[1]
			a, lda, b, ldb := bf16Operands(rng, s.transB, s.m, s.n, s.k, 3)
			ldc := s.n + 2
			c0 := make([]float32, s.m*ldc)
			for i := range c0 {
				c0[i] = float32(rng.NormFloat64())
				if beta == 0 || i%ldc >= s.n {
					c0[i] = float32(math.NaN())
				}
			}
			want, abs := refSgemmBF16(s.transB, false, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c0, ldc)
			var first []float32
			for _, th := range []int{1, 2, 3, 8} {
				c := append([]float32(nil), c0...)
				Par{Threads: th}.SgemmBF16(s.transB, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc)
				if first != nil {
					require.Equal(t, f32bits(first), f32bits(c), "%+v alpha %g beta %g: threads %d differ from threads 1", s, alpha, beta, th)
					continue
				}
				first = c
				for i := range s.m {
					for j := range s.n {
						// As the dot route: A split to 2⁻¹⁷ relative, float32
						// accumulation; within 2⁻¹⁶ of the sum of absolute terms.
						w, tol := want[i*s.n+j], math.Ldexp(abs[i*s.n+j], -16)
						require.InDelta(t, w, float64(c[i*ldc+j]), tol, "%+v alpha %g beta %g (%d,%d)", s, alpha, beta, i, j)
					}
					for j := s.n; j < ldc; j++ {
						require.True(t, math.IsNaN(float64(c[i*ldc+j])), "the padding of C is not written")
					}
				}
				if s.transB && s.m <= bf16DotRows {
					// Row invariance: each row alone, as the sampling step
					// computes a sequence batched with others or not.
					for i := range s.m {
						one := append([]float32(nil), c0[i*ldc:(i+1)*ldc]...)
						Par{Threads: 2}.SgemmBF16(true, 1, s.n, s.k, alpha, a[i*lda:], lda, b, ldb, beta, one, ldc)
						require.Equal(t, f32bits(c[i*ldc:(i+1)*ldc]), f32bits(one), "%+v alpha %g beta %g: row %d alone", s, alpha, beta, i)
					}
				}
			}
		}
	}
}

// vexAMX encodes the AMX instructions the assembly uses (VEX.128.0F38.W0,
// no vvvv but TDPBF16PS's): op and pp per instruction, modrm and the rest
// from the operands. Registers are numbered as in the instruction set
// (0-15 for general registers, 0-7 for tiles).
func vexAMX(pp, vvvv, op byte, reg, rmOrBase, index int, disp int, mem bool) []byte {
	inv := func(bit int) byte { return byte(^bit & 1) }
	x := 0
	if mem {
		x = index >> 3
	}
	b1 := inv(reg>>3)<<7 | inv(x)<<6 | inv(rmOrBase>>3)<<5 | 0b00010
	b2 := byte(^vvvv&0xF)<<3 | pp
	out := []byte{0xc4, b1, b2, op}
	if !mem {
		return append(out, 0xC0|byte(reg&7)<<3|byte(rmOrBase&7))
	}
	mod := byte(0)
	if disp != 0 {
		mod = 1
	}
	out = append(out, mod<<6|byte(reg&7)<<3|0b100, byte(index&7)<<3|byte(rmOrBase&7))
	if disp != 0 {
		out = append(out, byte(disp))
	}
	return out
}

// TestAMXEncodings: every AMX instruction written as bytes in
// amx_amd64.s carries, in its comment, the instruction (Intel operand
// order); the bytes are its encoding. The encoder is checked on bytes GNU
// objdump decodes as "tileloadd 0x40(%rdi,%rbx,1),%tmm7", "tilestored
// %tmm3,0x40(%r12,%r11,1)" and "tdpbf16ps %tmm7,%tmm5,%tmm3".
func TestAMXEncodings(t *testing.T) {
	t.Parallel()
	regs := map[string]int{"RAX": 0, "RCX": 1, "RDX": 2, "RBX": 3, "RSP": 4, "RBP": 5, "RSI": 6, "RDI": 7}
	for r := 8; r < 16; r++ {
		regs["R"+strconv.Itoa(r)] = r
	}
	tileload := func(tmm, base, index, disp int) []byte { return vexAMX(0b11, 0, 0x4b, tmm, base, index, disp, true) }
	tilestore := func(tmm, base, index, disp int) []byte { return vexAMX(0b10, 0, 0x4b, tmm, base, index, disp, true) }
	tdp := func(dst, a, b int) []byte { return vexAMX(0b10, byte(b), 0x5c, dst, a, 0, 0, false) }
	require.Equal(t, []byte{0xc4, 0xe2, 0x7b, 0x4b, 0x7c, 0x1f, 0x40}, tileload(7, 7, 3, 64))
	require.Equal(t, []byte{0xc4, 0x82, 0x7a, 0x4b, 0x5c, 0x1c, 0x40}, tilestore(3, 12, 11, 64))
	require.Equal(t, []byte{0xc4, 0xe2, 0x42, 0x5c, 0xdd}, tdp(3, 5, 7))

	src, err := os.ReadFile("amx_amd64.s")
	require.NoError(t, err)
	mem := `\[(R\w+)\+(R\w+)\*1(?:\+(\d+))?\]`
	forms := []struct {
		re  *regexp.Regexp
		enc func(m []string) []byte
	}{
		{regexp.MustCompile(`^LDTILECFG \[(R\w+)\]$`), func(m []string) []byte { return vexAMX(0b00, 0, 0x49, 0, regs[m[1]], 0, 0, false)[:4:4] }},
		{regexp.MustCompile(`^TILERELEASE$`), func([]string) []byte { return vexAMX(0b00, 0, 0x49, 0, 0, 0, 0, false) }},
		{regexp.MustCompile(`^TILEZERO TMM(\d)$`), func(m []string) []byte { return vexAMX(0b11, 0, 0x49, atoi(m[1]), 0, 0, 0, false) }},
		{regexp.MustCompile(`^TILELOADD TMM(\d), ` + mem + `$`), func(m []string) []byte { return tileload(atoi(m[1]), regs[m[2]], regs[m[3]], atoi(m[4])) }},
		{regexp.MustCompile(`^TILESTORED ` + mem + `, TMM(\d)$`), func(m []string) []byte { return tilestore(atoi(m[4]), regs[m[1]], regs[m[2]], atoi(m[3])) }},
		{regexp.MustCompile(`^TDPBF16PS TMM(\d), TMM(\d), TMM(\d)$`), func(m []string) []byte { return tdp(atoi(m[1]), atoi(m[2]), atoi(m[3])) }},
	}
	line := regexp.MustCompile(`^\s*((?:BYTE \$0x[0-9a-f]{2};?\s*)+)// (.+)$`)
	seen := 0
	for n, l := range strings.Split(string(src), "\n") {
		if !strings.Contains(l, "BYTE") {
			continue
		}
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "amx_amd64.s:%d: a BYTE line without its instruction: %q", n+1, l)
		var got []byte
		for _, b := range strings.Split(m[1], ";") {
			if b = strings.TrimSpace(b); b != "" {
				v, err := strconv.ParseUint(strings.TrimPrefix(b, "BYTE $0x"), 16, 8)
				require.NoError(t, err)
				got = append(got, byte(v))
			}
		}
		ins := strings.TrimSpace(m[2])
		var want []byte
		for _, f := range forms {
			if fm := f.re.FindStringSubmatch(ins); fm != nil {
				want = f.enc(fm)
				if strings.HasPrefix(ins, "LDTILECFG") {
					// The memory form [reg] with mod 00 and no SIB.
					want = append(want, byte(regs[fm[1]]&7))
				}
				break
			}
		}
		require.NotNil(t, want, "amx_amd64.s:%d: an instruction the test does not know: %q", n+1, ins)
		require.Equal(t, want, got, "amx_amd64.s:%d: %s", n+1, fmt.Sprint(ins))
		seen++
	}
	require.Equal(t, 3*(1+1)+(4+6+8+4)+(4+4+4+4)+(2+3+2+2), seen, "AMX lines: per kernel LDTILECFG and TILERELEASE; amxTiles32's 4 TILEZERO, 6 TILELOADD, 8 TDPBF16PS and 4 TILESTORED; amxDot32's 4, 4, 4 and 4; amxDot32n's 2, 3, 2 and 2")
}

func atoi(s string) int {
	if s == "" {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return v
}

// f32bits is x's bit patterns, so that NaNs compare equal.
func f32bits(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}
