package kernels

import (
	"math"
	"sync"
	"unsafe"
)

// BF16 is a bfloat16 number: the upper 16 bits of a float32 (sign, the
// 8-bit exponent and 7 bits of mantissa), the precision most checkpoints of
// real models are stored in.
type BF16 uint16

// ToBF16 rounds f to the nearest bfloat16, ties to even; infinities stay
// infinite and a NaN stays a (quiet) NaN of the same sign.
func ToBF16(f float32) BF16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return BF16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

// Float32 is b as a float32 (exact).
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// RoundBF16 sets dst[i] = ToBF16(src[i]). It panics when the lengths
// differ.
func RoundBF16(dst []BF16, src []float32) {
	checkSameLen("RoundBF16", len(dst), len(src))
	if roundRow != nil {
		roundRow(dst, src)
		return
	}
	for i, f := range src {
		dst[i] = ToBF16(f)
	}
}

// WidenBF16 sets dst[i] = src[i].Float32(). It panics when the lengths
// differ.
func WidenBF16(dst []float32, src []BF16) {
	checkSameLen("WidenBF16", len(dst), len(src))
	if widenRow != nil {
		widenRow(dst, src)
		return
	}
	for i, b := range src {
		dst[i] = b.Float32()
	}
}

// roundRow, when set (AVX-512), is RoundBF16's loop, bit for bit.
var roundRow func(dst []BF16, x []float32)

// widenRow, when set (AVX2), is WidenBF16's loop, bit for bit.
var widenRow func(dst []float32, src []BF16)

// SgemmBF16 computes C = alpha·A·op(B) + beta·C for a float32 A (m×k, row
// stride lda, not transposed), a bfloat16 B and a float32 C (m×n, stride
// ldc). With transB, op(B) = Bᵀ and B is stored n×k (a weight matrix
// [out, in], as checkpoints store it, multiplying activations from the
// right); otherwise B is stored k×n. Arguments follow Sgemm's rules.
//
// # Arithmetic
//
// Which arithmetic runs depends on the CPU, as for Sgemm; BF16Implementation
// reports it.
//
//   - amx (AMX-BF16 and AVX512_BF16, the default where the CPU and the
//     operating system have them: Intel's Xeons from Sapphire Rapids on,
//     Linux 5.16 or later): each element of A is split into two bfloat16
//     parts, hi (A rounded to nearest, ties to even) and lo (A − hi,
//     rounded), which hold it to 16 significant bits (a relative error
//     below 2⁻¹⁷), and the tile unit multiplies them with B, each step of
//     32 depth elements adding hi·B, then lo·B, to float32 sums, an
//     element's sum over the whole depth in one chain. Products of at most
//     16 rows with transB and a depth that is a multiple of 32 (the
//     sampling step) read B in place, 32 rows at a time, as the tile
//     unit's left operand, and are row-invariant as avx512's dot route
//     below; the others pack B in panels of 32 columns and run 32×32
//     blocks of C at several times Sgemm's rate.
//     The tile unit's rounding within a step is its own (the products are
//     exact; the order of the sums within a step is not documented), so
//     tests hold it to float64 arithmetic. Other products run as avx512
//     does.
//   - avx512 (AVX-512 with AVX512BW and AVX512VL, the default where the
//     CPU has them but no AMX, or TANDEM_KERNELS=avx512): the products
//     Sgemm's AVX-512 dot route takes (transB, at most 96 rows: the
//     sampling step, bound by streaming B, and short prompts) run on that
//     route's kernels' bfloat16 twins, which read B in place at half its
//     float32 bytes and widen each element as they load it (exact: a
//     bfloat16 is the upper half of its float32); the others run as widen
//     does. Every result is Sgemm's on B widened, bit for bit, and on the
//     dot route an element's value depends on its row of A and its column
//     of op(B) only, never on the other rows: a row computed alone equals
//     the same row among up to 96 (24 when n <= 16, which widens and takes
//     Sgemm's AVX2 routes; continuous batching relies on it, with blocks
//     of 16). VDPBF16PS is not used: exact products need A split in two
//     bfloat16 parts, two instructions per pair of depth steps, and on
//     Intel's cores it runs at a quarter of VFMADD231PS's instruction
//     rate, half its multiply-adds (measured on an Emerald Rapids Xeon,
//     twelve independent sums each), so the twins are faster
//     (16×3072×1024: 1.7×) and exact per product; on AMD's Zen 5 it runs
//     at 0.93 of VFMADD231PS's rate, 1.85 times its multiply-adds, which
//     pays only with A rounded. [Par.SgemmBF16RoundA] rounds A instead and
//     runs VDPBF16PS on every product where the CPU has AVX512_BF16 and no
//     AMX: the sampling step's (at most 16 rows) as 4×4 tiles of dot products over the rows of A and
//     B (one row: against two streams of B's rows, as Sgemm's AVX-512 dot
//     route does), each element summing in 16 lanes, lane l over the
//     pairs (32g+2l, 32g+2l+1) in order of g, then in a fixed tree; the
//     others on packed copies in 12×32 tiles, each element summing its
//     pairs in order, one depth pass of 512 steps at a time (first
//     C = alpha·s₀ + beta·C, then C = alpha·sᵢ + C).
//   - avx2 (AVX2 and FMA without AVX-512, or TANDEM_KERNELS=avx2): as
//     avx512, on the bfloat16 twins of Sgemm's AVX2 dot kernels (3×4
//     tiles, one row against two streams of B's rows, at most 24 rows), B widened in the
//     register as it loads (VPMOVZXWD, VPSLLD); the others widen. A 1-row
//     product streams its weights once, at 2 bytes each (on AMD's Zen 3,
//     3072×1024: 1.3-1.6 times Sgemm's speed, where widening ran at 0.6).
//   - widen (every other CPU, and TANDEM_KERNELS=purego): B is widened to
//     float32 a block at a time (4 MiB at most), each block run through
//     Sgemm, so that the result is Sgemm's on B widened, bit for bit, as
//     SgemmF16's.
//
// Results are bit-identical for every Par.Threads value; they differ in
// the last bits between implementations.
func (p Par) SgemmBF16(transB bool, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) {
	checkGemm("SgemmBF16", false, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	sgemmBF16(p, false, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16RoundA is SgemmBF16 with each element of A rounded to one
// bfloat16 (a relative error up to 2⁻⁹): where the CPU has AVX512_BF16
// but no AMX every product runs VDPBF16PS as SgemmBF16's documentation
// says ([BF16RoundsA] reports it); elsewhere it computes SgemmBF16's
// result and does not round A (with AMX, SgemmBF16's tile unit is several
// times faster than VDPBF16PS). On AMD's Zen 5 that is 1.8-2.5 times
// SgemmBF16's and Sgemm's speed on products of 64 to 512 rows
// (bench/kernels; VDPBF16PS does 1.85 times VFMADD231PS's multiply-adds
// there); on Intel's cores without AMX it is slower than SgemmBF16 (half
// VFMADD231PS's multiply-adds).
func (p Par) SgemmBF16RoundA(transB bool, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) {
	checkGemm("SgemmBF16RoundA", false, transB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	sgemmBF16(p, true, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func sgemmBF16(p Par, roundA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	dot := transB && m <= bf16DotRows // the sampling step's products
	if roundA && BF16RoundsA() {
		if dot {
			bf16DotGemm(p, bf16Round, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		} else {
			bf16PackedGemm(p, bf16Round, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
		return
	}
	switch {
	case amx != nil && dot && k%amxKS == 0:
		amxDotGemm(p, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	case amx != nil && !dot:
		amxGemm(p, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	default:
		if r := wideRouteFor(bf16Dots, transB, m, n); r != nil {
			// B read in place at 2 bytes an element.
			dotGemm(r.im, r.d, p, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
		widenGemm(p, WidenBF16, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// BF16Implementation names the arithmetic SgemmBF16 runs on this machine:
// "amx", "avx512" or "avx2" (the sampling step's products by the bfloat16
// twins of Sgemm's AVX-512 or AVX2 dot kernels, the others on widened
// blocks, all bit for bit Sgemm's on B widened) or "widen".
func BF16Implementation() string {
	if amx != nil {
		return "amx"
	}
	return wideRouteName(bf16Dots)
}

// BF16RoundsA reports whether SgemmBF16RoundA rounds A on this machine
// (AVX512_BF16 without AMX, and TANDEM_KERNELS allowing it); where it does
// not, it computes SgemmBF16's result.
func BF16RoundsA() bool { return bf16Round != nil && amx == nil }

// bf16Kernels are SgemmBF16RoundA's VDPBF16PS kernels, over A rounded to
// bfloat16.
type bf16Kernels struct {
	// dot computes a 4×4 tile of C = alpha·A·Bᵀ + beta·C over rows
	// a[r*lda:] and b[j*ldb:] of length k >= 1; C is not read when
	// beta == 0.
	dot func(k int, a []BF16, lda int, b []BF16, ldb int, c []float32, ldc int, alpha, beta float32)
	// stream computes C for one row a (see dotStreamKernel), each element
	// exactly as dot does.
	stream dotStreamKernel[BF16, BF16, float32]
	// gemm computes a bgMR×bgNR tile of C = alpha·A·B + beta·C over kp >= 1
	// pairs of depth steps from A's rows (row r at a[r*lda:], lda even; see
	// packPairsA) and pair-packed B (see packPairsB).
	gemm func(kp int, a []BF16, lda int, b []BF16, c []float32, ldc int, alpha, beta float32)
}

// bf16Round holds SgemmBF16RoundA's AVX512_BF16 kernels; nil where the
// CPU has none.
var bf16Round *bf16Kernels

// bf16Dots are the dot routes with B in bfloat16 (see wideRoute), one
// per implementation whose kernels have twins on this CPU (AVX-512 with
// AVX512BW and AVX512VL; AVX2).
var (
	bf16Dots     []wideRoute[BF16]
	bf16EdgePool sync.Pool
)

// splitRow, when set (AVX512_BF16), sets hi[i], lo[i] = splitBF16(x[i]) for
// every i of x, bit for bit as splitBF16 does.
var splitRow func(hi, lo []BF16, x []float32)

// splitBF16s is splitRow, or splitBF16 element by element.
func splitBF16s(hi, lo []BF16, x []float32) {
	if splitRow != nil {
		splitRow(hi, lo, x)
		return
	}
	for i, v := range x {
		hi[i], lo[i] = splitBF16(v)
	}
}

// splitBF16 is x as hi + lo: hi rounded to nearest, lo the rest rounded
// (x − hi is exact in float32).
func splitBF16(x float32) (hi, lo BF16) {
	hi = ToBF16(x)
	return hi, ToBF16(x - hi.Float32())
}

// bf16DotRows is the most rows of A the AMX and A-rounded dot routes take
// (an AMX tile holds 16 rows); the bfloat16 twins of Sgemm's dot kernels
// take as many as Sgemm's AVX-512 dot route (avx512DotRows).
const bf16DotRows = 16

var bf16Pool = sync.Pool{New: func() any { return new([]BF16) }}

// takeScratch takes one buffer per worker from pool (of *[]T);
// putScratch returns them.
func takeScratch[T any](pool *sync.Pool, workers int) []*[]T {
	s := make([]*[]T, workers)
	for w := range s {
		s[w] = pool.Get().(*[]T)
	}
	return s
}

func putScratch[T any](pool *sync.Pool, s []*[]T) {
	for _, b := range s {
		pool.Put(b)
	}
}

// bf16DotGemm runs SgemmBF16RoundA's dot route: A's rows rounded to
// bfloat16 into a buffer of whole 4-row blocks (zero rows below m), B's rows read in place but for a zero-padded copy of its
// last partial 4-row tile, each 4×4 tile of C by the same kernel (edge
// tiles through a scratch tile), tiles split over goroutines by columns.
// Nothing a tile computes depends on the others, so neither the split nor
// m changes a value.
func bf16DotGemm(p Par, ks *bf16Kernels, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) {
	if m == 1 {
		abuf := bf16Pool.Get().(*[]BF16)
		defer bf16Pool.Put(abuf)
		ab := growSlice(abuf, k)
		RoundBF16(ab, a[:k])
		// Streaming the weights is the cost, not arithmetic.
		streamRows(p.workers(n, int64(n)*int64(k), minStreamPerThread), ks.stream, n, k, alpha, ab, b, ldb, beta, c)
		return
	}
	const mr, nr = 4, 4
	rowBlocks := ceilDiv(m, mr)
	abuf := bf16Pool.Get().(*[]BF16)
	defer bf16Pool.Put(abuf)
	ab := growSlice(abuf, rowBlocks*mr*k)
	clear(ab)
	for i := range m {
		RoundBF16(ab[i*k:][:k], a[i*lda:][:k])
	}
	colTiles := ceilDiv(n, nr)
	threads := p.workers(colTiles, int64(m)*int64(n)*int64(k), minWorkPerThread)
	const chunk = 16 // column tiles per work item
	items := ceilDiv(colTiles, chunk)
	threads = min(threads, items)
	scratch := takeScratch[BF16](&bf16Pool, threads)
	defer putScratch(&bf16Pool, scratch)
	parallelFor(threads, items, func(item, w int) {
		var tile [mr * nr]float32
		for jt := item * chunk; jt < min((item+1)*chunk, colTiles); jt++ {
			j0 := jt * nr
			nb := min(nr, n-j0)
			bp, ldbp := b[j0*ldb:], ldb
			if nb < nr {
				edge := growSlice(scratch[w], nr*k)
				for j := range nr {
					if j < nb {
						copy(edge[j*k:(j+1)*k], b[(j0+j)*ldb:][:k])
					} else {
						clear(edge[j*k : (j+1)*k])
					}
				}
				bp, ldbp = edge, k
			}
			for ib := range rowBlocks {
				i0 := ib * mr
				mi := min(mr, m-i0)
				as := ab[ib*mr*k:]
				if mi == mr && nb == nr {
					ks.dot(k, as, k, bp, ldbp, c[i0*ldc+j0:], ldc, alpha, beta)
					continue
				}
				if beta != 0 {
					for r := range mi {
						copy(tile[r*nr:r*nr+nb], c[(i0+r)*ldc+j0:][:nb])
					}
				}
				ks.dot(k, as, k, bp, ldbp, tile[:], nr, alpha, beta)
				for r := range mi {
					copy(c[(i0+r)*ldc+j0:][:nb], tile[r*nr:r*nr+nb])
				}
			}
		}
	})
}

// dpbf16 is one VDPBF16PS lane step in Go: acc + a1·b1 + a0·b0, the odd
// pair element first, each product exact in float32 (8-bit mantissas) and
// each sum rounded. Tests compare the assembly against it.
func dpbf16(acc float32, a0, a1, b0, b1 BF16) float32 {
	acc += a1.Float32() * b1.Float32()
	return acc + a0.Float32()*b0.Float32()
}

// The packed route's tile and depth pass: 12×32 tiles of C, 512 depth
// steps (256 pairs) per pass, so a packed B panel (32 KiB) sits in L1.
const bgMR, bgNR, bgKC = 12, 32, 512

// bf16PackedGemm runs the packed route of SgemmBF16RoundA, in depth passes
// of bgKC steps. A pass packs A once, its row blocks in parallel, rounded
// to bfloat16 (row by row: see packPairsA). Work items are chunks of B's
// column panels; a worker packs each panel as pairs (bgNR dwords per pair,
// column j's elements 2q and 2q+1, zero past n and k) and runs every row
// block against it. Each tile is computed by the one kernel, edge tiles
// through a scratch tile; the first pass applies beta and later ones add
// to C, so neither the split of the work nor its order changes a value.
func bf16PackedGemm(p Par, ks *bf16Kernels, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) {
	const mr, nr, kc = bgMR, bgNR, bgKC
	rowBlocks, panels := ceilDiv(m, mr), ceilDiv(n, nr)
	threads := p.workers(panels, int64(m)*int64(n)*int64(k), minWorkPerThread)
	chunk := max(1, panels/(itemsPerThread*threads))
	items := ceilDiv(panels, chunk)
	threads = min(threads, items)
	abuf := bf16Pool.Get().(*[]BF16)
	defer bf16Pool.Put(abuf)
	scratch := takeScratch[BF16](&bf16Pool, threads)
	defer putScratch(&bf16Pool, scratch)
	for pc := 0; pc < k; pc += kc {
		kl := min(kc, k-pc)
		kp := ceilDiv(kl, 2)
		ap := growSlice(abuf, rowBlocks*kp*mr*2)
		parallelFor(min(threads, rowBlocks), rowBlocks, func(ib, _ int) {
			packPairsA(ap[ib*kp*mr*2:], ib, m, kl, kp, a[pc:], lda)
		})
		bt := beta
		if pc > 0 {
			bt = 1
		}
		parallelFor(threads, items, func(item, w int) {
			bp := growSlice(scratch[w], kp*nr*2)
			var tile [mr * nr]float32
			for jp := item * chunk; jp < min((item+1)*chunk, panels); jp++ {
				j0 := jp * nr
				nb := min(nr, n-j0)
				packPairsB(bp, transB, j0, nb, pc, kl, kp, b, ldb)
				for ib := range rowBlocks {
					i0 := ib * mr
					mi := min(mr, m-i0)
					as := ap[ib*kp*mr*2:]
					if mi == mr && nb == nr {
						ks.gemm(kp, as, 2*kp, bp, c[i0*ldc+j0:], ldc, alpha, bt)
						continue
					}
					if bt != 0 {
						for r := range mi {
							copy(tile[r*nr:r*nr+nb], c[(i0+r)*ldc+j0:][:nb])
						}
					}
					ks.gemm(kp, as, 2*kp, bp, tile[:], nr, alpha, bt)
					for r := range mi {
						copy(c[(i0+r)*ldc+j0:][:nb], tile[r*nr:r*nr+nb])
					}
				}
			}
		})
	}
}

// packPairsA packs row block ib of A (kl columns, a starting at the
// pass's first column) for the packed route, rounded to bfloat16: row r
// at dst[r*2*kp:], its pair q the dword at elements 2q and 2q+1, zero past
// kl and m.
func packPairsA(dst []BF16, ib, m, kl, kp int, a []float32, lda int) {
	const mr = bgMR
	rows := min(mr, m-ib*mr)
	for r := range rows {
		row := dst[r*2*kp : (r+1)*2*kp]
		RoundBF16(row[:kl], a[(ib*mr+r)*lda:][:kl])
		if kl%2 != 0 {
			row[kl] = 0
		}
	}
	clear(dst[rows*2*kp : mr*2*kp])
}

// packPairsB packs the panel of op(B)'s columns [j0, j0+nb) and depth
// steps [pc, pc+kl): pair q, column j at dst[(q*bgNR+j)*2 : +2], zero past
// nb and kl.
func packPairsB(dst []BF16, transB bool, j0, nb, pc, kl, kp int, b []BF16, ldb int) {
	const nr = bgNR
	if nb < nr || kl%2 != 0 {
		clear(dst[:kp*nr*2])
	}
	if transB && !aligned4(b, ldb, pc) {
		for j := range nb {
			row := b[(j0+j)*ldb+pc:][:kl]
			for p, v := range row {
				dst[((p/2)*nr+j)*2+p%2] = v
			}
		}
		return
	}
	if transB {
		// Each pair is a dword of a row of B, so the panel is a transpose
		// of dwords: whole 8×8 blocks by the float32 packer's vector
		// transposes (pure data movement, bits unchanged), the edges and an
		// odd last element below.
		d32 := unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), kp*nr)
		full := kl / 2
		jDone, qDone := 0, 0
		if transpose8x8 != nil && full >= 8 && nb >= 8 {
			jDone, qDone = nb/8*8, full/8*8
			src := unsafe.Slice((*float32)(unsafe.Pointer(&b[j0*ldb+pc])), ((jDone-1)*ldb+2*qDone)/2)
			transpose8x8(unsafe.Slice((*float32)(unsafe.Pointer(&d32[0])), len(d32)), nr, src, ldb/2, jDone/8, qDone/8)
		}
		for j := range nb {
			row := b[(j0+j)*ldb+pc:][:kl]
			q0 := 0
			if j < jDone {
				q0 = qDone
			}
			for q := q0; q < full; q++ {
				d32[q*nr+j] = uint32(row[2*q]) | uint32(row[2*q+1])<<16
			}
			if kl%2 != 0 {
				dst[((kp-1)*nr+j)*2] = row[kl-1]
			}
		}
		return
	}
	d32 := unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), kp*nr)
	for q := range kp {
		even := b[(pc+2*q)*ldb+j0:][:nb]
		out := d32[q*nr : q*nr+nb]
		if 2*q+1 < kl {
			odd := b[(pc+2*q+1)*ldb+j0:][:nb]
			if interleaveBF16 != nil {
				interleaveBF16(out, even, odd)
				continue
			}
			for j := range out {
				out[j] = uint32(even[j]) | uint32(odd[j])<<16
			}
			continue
		}
		for j := range out {
			out[j] = uint32(even[j])
		}
	}
}

// interleaveBF16, when set (amd64 with AVX2), sets dst[j] = even[j] |
// odd[j]<<16 for every j of dst (even and odd at least as long).
var interleaveBF16 func(dst []uint32, even, odd []BF16)

// aligned4 reports whether every row of b, from column pc on, starts on a
// 4-byte boundary, so that its pairs can be read as uint32s.
func aligned4(b []BF16, ldb, pc int) bool {
	return ldb%2 == 0 && pc%2 == 0 && uintptr(unsafe.Pointer(&b[0]))%4 == 0
}
