package kernels

import (
	"math"
	"sync"
)

// F16 is an IEEE 754 half-precision number (binary16) by its bits: sign,
// a 5-bit exponent and 10 bits of mantissa, as float16 checkpoints store
// their weights. Every F16 is exactly a float32.
type F16 uint16

// ToF16 rounds f to the nearest F16, ties to even; values past the largest
// half (65504) round to ±Inf as IEEE rounding does, small ones to a
// subnormal or a signed zero, and a NaN stays a (quiet) NaN of the same
// sign.
func ToF16(f float32) F16 {
	b := math.Float32bits(f)
	sign := F16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // a subnormal half or zero
		if e < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint32(14 - e)
		half := man >> shift
		rem := man & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++ // may carry into the smallest normal: correct
		}
		return sign | F16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, up to Inf: correct
	}
	return sign | F16(half)
}

// Float32 is h as a float32: exact, but that a NaN comes back quiet (its
// payload kept in the top mantissa bits).
func (h F16) Float32() float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: man·2⁻²⁴, exact in float32
		f := float32(man) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(f) | sign)
	case exp == 0x1f && man == 0:
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0x1f: // a NaN, quieted as VCVTPH2PS quiets it
		return math.Float32frombits(sign | 0x7fc00000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// IsFinite reports whether h is neither an infinity nor a NaN.
func (h F16) IsFinite() bool { return h&0x7c00 != 0x7c00 }

// RoundF16 sets dst[i] = ToF16(src[i]). It panics when the lengths differ.
func RoundF16(dst []F16, src []float32) {
	checkSameLen("RoundF16", len(dst), len(src))
	for i, f := range src {
		dst[i] = ToF16(f)
	}
}

// WidenF16 sets dst[i] = src[i].Float32(). It panics when the lengths
// differ.
func WidenF16(dst []float32, src []F16) {
	checkSameLen("WidenF16", len(dst), len(src))
	if widenF16Row != nil {
		widenF16Row(dst, src)
		return
	}
	for i, h := range src {
		dst[i] = h.Float32()
	}
}

// widenF16Row, when set (F16C), is WidenF16's loop, bit for bit.
var widenF16Row func(dst []float32, src []F16)

// SgemmF16 computes C = alpha·A·op(B) + beta·C for a float32 A (m×k, row
// stride lda, not transposed), a half-precision B and a float32 C (m×n,
// stride ldc). With transB, op(B) = Bᵀ and B is stored n×k (a weight
// matrix [out, in]); otherwise B is stored k×n. Arguments follow Sgemm's
// rules.
//
// # Arithmetic
//
// A half widens to float32 exactly, so SgemmF16 computes what Sgemm
// computes on B widened, bit for bit, on every CPU and for every
// Par.Threads value: B is widened (F16C's VCVTPH2PS where the CPU has it)
// a block of op(B)'s columns at a time into scratch, and each block runs
// through Sgemm's kernels with the tile grid and route of the whole
// product. The products Sgemm sends to its dot route (A·Bᵀ with at most
// 24 rows, AVX-512: 96, the sampling step) run instead on half-precision
// twins of its dot kernels where the CPU has F16C (AVX-512's need AVX512BW
// and AVX512VL too), which read B in place and widen each element as they
// load it, with the same result. Either way the weights are read from
// memory once, at 2 bytes each: the sampling step's products, bound by
// memory, take well under float32's time; larger ones run at Sgemm's
// rate.
func (p Par) SgemmF16(transB bool, m, n, k int, alpha float32, a []float32, lda int, b []F16, ldb int, beta float32, c []float32, ldc int) {
	checkGemm("SgemmF16", false, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	if r := wideRouteFor(f16Dots, transB, m, n); r != nil {
		dotGemm(r.im, r.d, p, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	widenGemm(p, WidenF16, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// F16Implementation names how SgemmF16 runs the sampling step's products
// on this machine: "avx512" or "avx2" (F16 twins of those dot kernels,
// the weights read in place) or "widen" (blocks widened to float32, then
// Sgemm). Larger products always widen.
func F16Implementation() string { return wideRouteName(f16Dots) }

// f16Dots are the dot routes with B in half precision (see wideRoute),
// one per implementation whose kernels have twins on this CPU (AVX-512
// with F16C, AVX512BW and AVX512VL; AVX2 with F16C).
var (
	f16Dots     []wideRoute[F16]
	f16EdgePool sync.Pool
)

// wideRoute is the dot route of im with B stored in 16 bits (type W):
// kernels that widen each element of B as they load it and otherwise
// compute as im.dot's, so a product is Sgemm's on B widened, bit for bit,
// when Sgemm sends it to im's dot route.
type wideRoute[W F16 | BF16] struct {
	name string // "avx512" or "avx2"
	im   *gemmImpl[float32]
	d    *dotImplOf[float32, W]
}

// wideRouteFor returns the route of routes that computes a product of m
// rows and n columns (op(B) = Bᵀ when transB) as Sgemm would, or nil:
// Sgemm's implementation, or its narrow one when n <= narrowMaxN, must
// send the product to its dot route and have a twin among routes.
func wideRouteFor[W F16 | BF16](routes []wideRoute[W], transB bool, m, n int) *wideRoute[W] {
	im := sgemmImpl
	if im.narrow != nil && n <= im.narrowMaxN {
		im = im.narrow
	}
	if !transB || im.dot == nil || m > im.dot.maxRows {
		return nil
	}
	return wideRouteOf(routes, im)
}

// wideRouteOf returns the route of im among routes, or nil.
func wideRouteOf[W F16 | BF16](routes []wideRoute[W], im *gemmImpl[float32]) *wideRoute[W] {
	for i := range routes {
		if routes[i].im == im {
			return &routes[i]
		}
	}
	return nil
}

// wideRouteName names the route of Sgemm's implementation among routes,
// or "widen" where it has none.
func wideRouteName[W F16 | BF16](routes []wideRoute[W]) string {
	if r := wideRouteOf(routes, sgemmImpl); r != nil {
		return r.name
	}
	return "widen"
}
