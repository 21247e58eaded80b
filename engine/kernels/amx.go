package kernels

import (
	"sync"
	"unsafe"
)

// The AMX routes of SgemmBF16: on CPUs with AMX-BF16 (Intel's Sapphire
// Rapids and later) every product runs on the tile unit, which multiplies
// bfloat16 pairs at several times the rate the vector units reach in
// float32: amxGemm for products past the sampling step's rows, amxDotGemm
// for the sampling step's.

// amxKernels are the AMX route's kernels; amx is nil where the CPU or the
// operating system has no AMX (or TANDEM_KERNELS asks for "avx512", "avx2"
// or "purego").
type amxKernels struct {
	// tiles computes the raw sums of one 32-row block of A (hi and lo
	// parts, see amxGemm) against pairs consecutive packed panels of B over
	// ks steps of amxKS depth elements, into s (amxMR rows of
	// pairs·amxNR columns).
	tiles func(ks int, a []BF16, lda int, b []BF16, pairs int, s []float32)
	// store sets C = alpha·S + beta·C over rows×cols elements, each
	// fma(beta, C, alpha·S); C is not read when beta == 0.
	store func(c []float32, ldc int, s []float32, lds, rows, cols int, alpha, beta float32)
	// dot computes the raw sums of blocks consecutive blocks of amxMR rows
	// of W (n×k, stride ldw, read in place) against the packed rows of A
	// (see amxDotGemm) over ks steps of amxKS depth elements into s: per
	// block, W's rows by 16 columns, each the hi or the lo parts of a row
	// of A, twice for up to 16 rows of A (amxMR·32 floats), once when
	// narrow (at most 8 rows, amxMR·16 floats).
	dot func(narrow bool, ks int, w []BF16, ldw int, x []BF16, blocks int, s []float32)
	// dotStore sets C = alpha·(Shi + Slo)ᵀ + beta·C for one block of
	// dot's sums, the lo sums lo floats past the hi ones: rows×cols
	// elements (rows <= 16, cols <= amxMR), as store does.
	dotStore func(c []float32, ldc int, s []float32, lo, rows, cols int, alpha, beta float32)
}

var amx *amxKernels

// The AMX route's block: 32 rows of C by 32 columns (four 16×16 tiles),
// 32 depth elements (16 pairs) per tile product. Its panels of B are the
// packed route's (packPairsB), so amxNR is bgNR.
const amxMR, amxNR, amxKS = 32, bgNR, 32

// amxChunkBytes bounds one work item's packed panels of B: they are read
// once per block of 32 rows and should stay in L2 meanwhile.
const amxChunkBytes = 1 << 20

var amxPool = sync.Pool{New: func() any { return new([]float32) }}

// amxKC is the depth of one pass of amxGemm (a multiple of amxKS): a
// block of A's parts (256 KiB) and a chunk of packed panels stay in L2
// for the pass, however deep the product (the unembedding's gradient runs
// over the whole vocabulary).
const amxKC = 2048

// amxGemm runs SgemmBF16 on the tile unit, in passes of amxKC depth
// elements. Each element of A is split into hi and lo bfloat16 parts (16
// significant bits) as SgemmBF16 documents, so the products are as
// accurate as amxDotGemm's: a pass copies its columns of A once, zero-padded to
// whole blocks of amxMR rows and a multiple of amxKS columns, each block
// as the hi parts of its rows 0-15, their lo parts, then the same for
// rows 16-31. Work items are chunks of op(B)'s columns, whole panels of
// amxNR: a worker packs its chunk's panels for the pass as pairs of depth
// steps (packPairsB, zero past n and k) and runs every block of A against
// them, tile sums into a scratch block, then C = alpha·S + beta·C for the
// first pass and C = alpha·S + C for the others. Every element is summed
// pass by pass, each pass by the same tile instructions in the same
// order, whichever item or thread computes it, so results do not depend
// on Par.Threads.
func amxGemm(p Par, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) {
	blocks := ceilDiv(m, amxMR)
	panels := ceilDiv(n, amxNR)
	threads := p.workers(panels, int64(m)*int64(n)*int64(k), minWorkPerThread)
	kcPad := ceilDiv(min(k, amxKC), amxKS) * amxKS
	chunk := max(1, min(amxChunkBytes/(2*kcPad*amxNR), ceilDiv(panels, itemsPerThread*threads)))
	items := ceilDiv(panels, chunk)
	threads = min(threads, items)

	abuf := bf16Pool.Get().(*[]BF16)
	defer bf16Pool.Put(abuf)
	bufs := takeScratch[BF16](&bf16Pool, threads)
	defer putScratch(&bf16Pool, bufs)
	sbufs := takeScratch[float32](&amxPool, threads)
	defer putScratch(&amxPool, sbufs)
	for pc := 0; pc < k; pc += amxKC {
		kl := min(amxKC, k-pc)
		kpad := ceilDiv(kl, amxKS) * amxKS
		blockLen := 2 * amxMR * kpad
		ab := growSlice(abuf, blocks*blockLen)
		st := p.workers(blocks, int64(m)*int64(kl), minStreamPerThread)
		parallelFor(st, blocks, func(ib, _ int) {
			blk := ab[ib*blockLen : (ib+1)*blockLen]
			for r := range amxMR {
				base := (r/16*32 + r%16) * kpad
				hi, lo := blk[base:base+kpad], blk[base+16*kpad:base+17*kpad]
				i := ib*amxMR + r
				if i >= m {
					clear(hi)
					clear(lo)
					continue
				}
				splitBF16s(hi[:kl], lo[:kl], a[i*lda+pc:][:kl])
				clear(hi[kl:])
				clear(lo[kl:])
			}
		})
		bt := beta
		if pc > 0 {
			bt = 1
		}
		panelLen := kpad * amxNR // bfloat16 elements of one packed panel
		kp := ceilDiv(kl, 2)
		parallelFor(threads, items, func(item, w int) {
			jp0 := item * chunk
			np := min(chunk, panels-jp0)
			bp := growSlice(bufs[w], np*panelLen)
			for q := range np {
				j0 := (jp0 + q) * amxNR
				dst := bp[q*panelLen : (q+1)*panelLen]
				packPairsB(dst, transB, j0, min(amxNR, n-j0), pc, kl, kp, b, ldb)
				clear(dst[kp*amxNR*2:])
			}
			lds := np * amxNR
			s := growSlice(sbufs[w], amxMR*lds)
			j0 := jp0 * amxNR
			cols := min(lds, n-j0)
			for ib := range blocks {
				amx.tiles(kpad/amxKS, ab[ib*blockLen:(ib+1)*blockLen], kpad, bp, np, s)
				i0 := ib * amxMR
				amx.store(c[i0*ldc+j0:], ldc, s, lds, min(amxMR, m-i0), cols, alpha, bt)
			}
		})
	}
}

// amxDotGemm is the AMX form of the dot route (op(B) = Bᵀ, m <= 16 and
// k a multiple of amxKS): Cᵀ = B·Aᵀ with the weights as the tile unit's
// left operand, read in place, 32 rows at a time (a zero-padded copy of
// the last partial block), and A's rows split into hi and lo parts as the
// other routes do, packed as the right operand: per pair of depth steps
// q, 16 dword pairs, one per column, zero past A's rows. Up to 8 rows of A
// share one tile per step (hi parts in columns 0-7, lo parts in 8-15);
// more take two (hi, then lo, 16 rows each). Each element of C is its hi
// column's sum plus its lo column's, each summed over the whole depth,
// step after step, by the same tile instructions whichever column holds
// it, whatever m is, how the blocks are split into work items or which
// thread runs them: a row computed alone equals the same row among up to
// 16 (continuous batching relies on it).
func amxDotGemm(p Par, m, n, k int, alpha float32, a []float32, lda int, b []BF16, ldb int, beta float32, c []float32, ldc int) {
	const cols = 16 // columns of a tile of A's parts
	ks := k / amxKS
	narrow := m <= cols/2
	xLen, sLen, loCol, loOff := 2*k*cols, amxMR*2*cols, cols*k/2, amxMR*cols
	if narrow {
		xLen, sLen, loCol, loOff = k*cols, amxMR*cols, cols/2, cols/2
	}
	xbuf := bf16Pool.Get().(*[]BF16)
	defer bf16Pool.Put(xbuf)
	x := growSlice(xbuf, xLen+2*k)
	clear(x[:xLen])
	hi, lo := x[xLen:xLen+k], x[xLen+k:]
	x32 := unsafe.Slice((*uint32)(unsafe.Pointer(&x[0])), xLen/2)
	for t := range m {
		splitBF16s(hi, lo, a[t*lda:][:k])
		for q := range k / 2 {
			x32[q*cols+t] = uint32(hi[2*q]) | uint32(hi[2*q+1])<<16
			x32[q*cols+loCol+t] = uint32(lo[2*q]) | uint32(lo[2*q+1])<<16
		}
	}
	x = x[:xLen]

	blocks := ceilDiv(n, amxMR)
	// Streaming the weights is the cost: a thread per 256 KiB of them.
	threads := p.workers(blocks, int64(n)*int64(k), minStreamPerThread)
	chunk := max(1, min(16, ceilDiv(blocks, itemsPerThread*threads)))
	items := ceilDiv(blocks, chunk)
	threads = min(threads, items)
	var edge []BF16
	if n%amxMR != 0 {
		ebuf := bf16Pool.Get().(*[]BF16)
		defer bf16Pool.Put(ebuf)
		edge = growSlice(ebuf, amxMR*k)
		clear(edge)
		j0 := n / amxMR * amxMR
		for j := range n - j0 {
			copy(edge[j*k:(j+1)*k], b[(j0+j)*ldb:][:k])
		}
	}
	sbufs := takeScratch[float32](&amxPool, threads)
	defer putScratch(&amxPool, sbufs)
	parallelFor(threads, items, func(item, w int) {
		b0 := item * chunk
		nb := min(chunk, blocks-b0)
		s := growSlice(sbufs[w], nb*sLen)
		full := nb
		if edge != nil && b0+nb == blocks {
			full--
		}
		if full > 0 {
			amx.dot(narrow, ks, b[b0*amxMR*ldb:], ldb, x, full, s)
		}
		if full < nb {
			amx.dot(narrow, ks, edge, k, x, 1, s[full*sLen:])
		}
		for i := range nb {
			j0 := (b0 + i) * amxMR
			amx.dotStore(c[j0:], ldc, s[i*sLen:], loOff, m, min(amxMR, n-j0), alpha, beta)
		}
	})
}
