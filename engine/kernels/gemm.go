package kernels

import (
	"sync"
	"unsafe"
)

// float is the element type of the kernels.
type float interface{ ~float32 | ~float64 }

// microKernel computes one mr×nr tile: C = alpha·(Ap·Bp) + beta·C, where Ap is
// an mr×k block of op(A) with element (i, p) at a[i*rsa+p*csa] (a packed panel
// has rsa = 1, csa = mr) and Bp holds k rows of nr contiguous elements at row
// stride ldb (element (p, j) at b[p*ldb+j]). C has row stride ldc. k >= 1.
// When beta == 0, C is not read.
//
// Every element of the tile is the sum over p = 0, 1, …, k-1 in that order,
// accumulated in its own register lane, so the value of an element does not
// depend on its position in the tile nor on the other elements.
//
// next, when not empty, is memory the caller reads soon after the call (the
// next block of packed B): a kernel may ask part of it into cache, from its
// start, while it runs. It never changes the result.
type microKernel[T float] func(k int, a []T, rsa, csa int, b []T, ldb int, c []T, ldc int, alpha, beta T, next []T)

// gemmImpl is one way to run GEMM: a micro-kernel and the blocking around it.
// All fields are fixed at package initialisation; a gemmImpl is read-only and
// safe for concurrent use.
type gemmImpl[T float] struct {
	name   string
	mr, nr int            // micro-tile
	kernel microKernel[T] // computes one mr×nr tile
	kc     int            // depth of one pass (rows of a B panel, sized for L1)
	mc     int            // most rows of C per work item (a multiple of mr)
	chunk  int            // most B panels (nr columns each) per work item
	// packBMinRows: B is packed when op(A) has more rows than this; below it,
	// B is used in place when it is not transposed (packing would cost more
	// than it saves).
	packBMinRows int
	// packAMinPanels (packATransMinPanels when A is transposed): a work item
	// packs its block of A when it will run it against at least this many B
	// panels; otherwise the kernel reads A in place and only a partial last
	// panel is packed. Reading a transposed A in place walks down columns at
	// stride lda, which thrashes a few L1 sets; rows in place are cheap.
	packAMinPanels, packATransMinPanels int
	// maxPackedB bounds the packed copy of B, in elements (0: the default);
	// it is exceeded only when one pass over one work item's columns needs
	// more.
	maxPackedB int
	// dot, when set, handles op(A) = A, op(B) = Bᵀ with m <= dot.maxRows.
	dot *dotImpl[T]
	// narrow, when set, handles problems with n <= narrowMaxN (a kernel with
	// narrower tiles wastes less on padding).
	narrow     *gemmImpl[T]
	narrowMaxN int
	// swapMaxN: a transposed A with n <= swapMaxN and m >= 4n is computed as
	// Cᵀ = op(B)ᵀ·op(A)ᵀ into scratch, then transposed into C. As it stands,
	// every row of the transposed A would be packed to be used against one
	// or two B panels; swapped, the few rows of op(B)ᵀ are packed once and
	// used against many panels.
	swapMaxN int
	// minWork is the least work (multiply-adds) that earns a goroutine;
	// 0 means minWorkPerThread. Tests lower it to run small products on
	// many goroutines.
	minWork int64
	pool    *sync.Pool // of *[]T scratch buffers
}

// threads returns how many goroutines par may use for nItems items worth
// work multiply-adds.
func (im *gemmImpl[T]) threads(par Par, nItems int, work int64) int {
	minWork := im.minWork
	if minWork == 0 {
		minWork = minWorkPerThread
	}
	return par.workers(nItems, work, minWork)
}

// streamThreads returns how many goroutines par may use for nItems items
// of a product bound by streaming elems elements of B once (the dot
// route's few rows of A): minStreamPerThread of them earn a goroutine, or
// im.minWork where tests set it.
func (im *gemmImpl[T]) streamThreads(par Par, nItems int, elems int64) int {
	minWork := im.minWork
	if minWork == 0 {
		minWork = minStreamPerThread
	}
	return par.workers(nItems, elems, minWork)
}

// never is a threshold no problem reaches.
const never = 1 << 30

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// getBuf returns a scratch slice of length n from the pool; putBuf returns it.
func (im *gemmImpl[T]) getBuf(n int) *[]T {
	if v, ok := im.pool.Get().(*[]T); ok && cap(*v) >= n {
		*v = (*v)[:n]
		return v
	}
	s := make([]T, n)
	return &s
}

func (im *gemmImpl[T]) putBuf(s *[]T) { im.pool.Put(s) }

// gemm computes C = alpha·op(A)·op(B) + beta·C on up to par.Threads goroutines.
// Arguments must have been checked by checkGemm.
//
// The result is bit-identical for every thread count: the output is cut into
// a fixed grid of mr×nr tiles starting at (0, 0); each tile is computed by the
// same micro-kernel over the same depth passes (kc rows at a time, first pass
// applying beta, later ones adding to C), whichever goroutine runs it.
func gemm[T float](im *gemmImpl[T], par Par, tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	if tA && n <= im.swapMaxN && m >= 4*n {
		swapGemm(im, par, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if im.narrow != nil && n <= im.narrowMaxN {
		gemm(im.narrow, par, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if d := im.dot; d != nil && !tA && tB && m <= d.maxRows {
		dotGemm(im, d, par, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if size := int(unsafe.Sizeof(a[0])); !tA && m > im.mr && n >= alignMinCols && aliasedRows(lda*size, im.mr) {
		alignedGemm(im, par, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	mr, nr := im.mr, im.nr
	packB := tB || m > im.packBMinRows

	// Columns are taken ncPanels panels at a time and depth kGroup rows at a
	// time, so that packed B stays within maxPackedB elements. Both are
	// multiples of the work-item and pass sizes, so the tile grid and the
	// passes are those of one big block: the result does not depend on them.
	limit := im.maxPackedB
	if limit == 0 {
		limit = defaultMaxPackedB
	}
	// A transposed B: the columns are as many as fit with the whole depth
	// (a work item then runs every depth pass of its tiles back to back, C
	// in cache between them), and at least a work item's. B in place: as
	// many columns as fit with one depth pass, up to all of them, so that
	// packing reads B's rows whole (see slab.run).
	depth := ceilDiv(k, im.kc) * im.kc
	if !tB {
		depth = im.kc
	}
	ncPanels := min(ceilDiv(n, nr), max(im.chunk, limit/(depth*nr)/im.chunk*im.chunk))
	kGroup := k
	if packB {
		kGroup = min(k, max(im.kc, limit/(ncPanels*nr)/im.kc*im.kc))
	}
	var bPacked []T
	if packB {
		buf := im.getBuf(min(kGroup, k) * ncPanels * nr)
		defer im.putBuf(buf)
		bPacked = *buf
	}

	// Per-worker scratch: packed A block, a padded edge panel of B, one tile.
	kcMax := min(im.kc, k)
	aLen := ceilDiv(min(im.mc, m), mr) * mr * kcMax
	scratchLen := aLen + kcMax*nr + mr*nr
	scratch := make([]*[]T, im.threads(par, m*ceilDiv(n, nr), int64(m)*int64(n)*int64(k)))
	for w := range scratch {
		scratch[w] = im.getBuf(scratchLen)
	}
	defer func() {
		for _, s := range scratch {
			im.putBuf(s)
		}
	}()

	for jc := 0; jc < n; jc += ncPanels * nr {
		nbc := min(ncPanels*nr, n-jc)
		for pc0 := 0; pc0 < k; pc0 += kGroup {
			kg := min(kGroup, k-pc0)
			s := slab[T]{
				im: im, tA: tA, tB: tB, m: m, n: n, k: k, alpha: alpha, beta: beta,
				a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc,
				j0: jc, nb: nbc, p0: pc0, kg: kg, packB: packB, bPacked: bPacked,
			}
			s.run(par, scratch, aLen, kcMax)
		}
	}
}

// alignedGemm is gemm for an A whose rows lie a multiple of 4 KiB (or
// some other stride that crowds the L1 cache's sets) apart: A is copied,
// once, to rows a stride from unaliasedStride apart, and the copy used. The
// micro-kernel reads a tile's mr rows of A together at every depth step;
// at such a stride (a model width of 1024, 2048 or 3072 float32) all of
// them fall in one set, which B's and C's lines then keep evicting. On
// AMD's Zen 5 (2 threads) X·Wᵀ 256×3072×1024 ran at 207-221 GFLOP/s with
// the rows 4 KiB apart and at 267-273 with them 4 KiB and 64 bytes apart,
// in a spell when the machine's other work crowded its caches (three
// alternations), and within ±5 % either way in a quiet one. The copy
// costs m·k element moves against m·n·k multiply-adds (n >= alignMinCols),
// and changes where A is read from, never the arithmetic: the result is
// the same bit for bit.
func alignedGemm[T float](im *gemmImpl[T], par Par, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	stride := unaliasedStride[T](k, im.mr)
	buf := im.getBuf(m * stride)
	defer im.putBuf(buf)
	ac := *buf
	const rowChunk = 64
	items := ceilDiv(m, rowChunk)
	parallelFor(im.threads(par, items, int64(m)*int64(k)*8), items, func(item, _ int) {
		for i := item * rowChunk; i < min((item+1)*rowChunk, m); i++ {
			copy(ac[i*stride:][:k], a[i*lda:][:k])
		}
	})
	gemm(im, par, false, tB, m, n, k, alpha, ac, stride, b, ldb, beta, c, ldc)
}

// alignMinCols is the fewest columns of C for which alignedGemm copies
// A: its m·k moves are then at most 1/256 of the m·n·k multiply-adds (a
// rank-16 LoRA product, n = 16, keeps its A in place).
const alignMinCols = 256

// unaliasedStride is the least row stride for rows of k elements that is
// a whole number of 64-byte lines and puts no more than four of rows
// rows in one L1 set (see aliasedRows).
func unaliasedStride[T float](k, rows int) int {
	var zero T
	size := int(unsafe.Sizeof(zero))
	line := 64 / size
	stride := ceilDiv(k, line) * line
	for aliasedRows(stride*size, rows) {
		stride += line
	}
	return stride
}

// aliasedRows reports whether rows rows strideBytes apart would crowd the
// L1 cache's sets: more than four of them in one set of 64-byte lines
// (64 sets, 4 KiB a way, as on AMD's Zen 4 and 5 and Intel's cores since
// Skylake).
func aliasedRows(strideBytes, rows int) bool {
	var sets [64]int
	for r := range rows {
		set := (r * strideBytes / 64) % 64
		sets[set]++
		if sets[set] > 4 {
			return true
		}
	}
	return false
}

// defaultMaxPackedB bounds the packed copy of B (elements) that one call
// holds: 4 MiB of float32, so that a slab's packed panels are still in
// cache when its work items read them, and each item's C tiles between
// its depth passes. bench/kernels on a Xeon with AMX, alternating builds:
// 16 MiB slabs of every column over one pass ran X·Wᵀ 512×3072×1024,
// G·W 512×1024×3072 and 512×8192×1024 at 0.72-0.80 of numpy's rate on
// 2 threads; these slabs, with B in place packed a row at a time, at
// 0.77-0.90, 0.84-0.90 and 0.79-0.86 (both before bench/kernels waited for
// OpenBLAS's spinning threads, which put every ratio 0.05-0.10 low).
const defaultMaxPackedB = 1 << 20

// slab is the part of a product that shares one packed block of B: columns
// [j0, j0+nb) of C, depth rows [p0, p0+kg) of op(B).
type slab[T float] struct {
	im             *gemmImpl[T]
	tA, tB         bool
	m, n, k        int
	alpha, beta    T
	a, b, c        []T
	lda, ldb, ldc  int
	j0, nb, p0, kg int
	packB          bool
	bPacked        []T // panel jp holds kg rows of nr columns at jp*kg*nr
}

// run packs the slab's B (when packB) and computes its work items on up to
// par.Threads goroutines, each with its own scratch.
func (s *slab[T]) run(par Par, scratch []*[]T, aLen, kcMax int) {
	im, nr := s.im, s.im.nr
	nPanels := ceilDiv(s.nb, nr)
	if s.packB {
		// Packing moves kg·nb elements; give it threads as if it were 8
		// times cheaper than the same number of multiply-adds.
		if s.tB {
			pt := min(len(scratch), im.threads(par, nPanels, int64(s.kg)*int64(s.nb)*8))
			parallelFor(pt, nPanels, func(jp, _ int) {
				j := s.j0 + jp*nr
				packBPanel(s.tB, s.b, s.ldb, s.p0, s.kg, j, min(nr, s.n-j), nr, s.bPacked[jp*s.kg*nr:(jp+1)*s.kg*nr])
			})
		} else {
			// B's rows are read whole, each a stream, and cut into the
			// slab's panels; a panel at a time would read nr elements from
			// each of kg rows a row stride apart, a page each, which the
			// prefetchers do not follow.
			const rowChunk = 16
			items := ceilDiv(s.kg, rowChunk)
			pt := min(len(scratch), im.threads(par, items, int64(s.kg)*int64(s.nb)*8))
			parallelFor(pt, items, func(item, _ int) {
				for p := item * rowChunk; p < min((item+1)*rowChunk, s.kg); p++ {
					src := s.b[(s.p0+p)*s.ldb+s.j0:][:s.nb]
					for jp := range nPanels {
						dst := s.bPacked[jp*s.kg*nr+p*nr:][:nr]
						w := copy(dst, src[jp*nr:min(len(src), (jp+1)*nr)])
						clear(dst[w:])
					}
				}
			})
		}
	}
	threads := min(len(scratch), im.threads(par, s.m*nPanels, int64(s.m)*int64(s.nb)*int64(s.kg)))
	mc, chunk := itemGrid(threads, s.m, nPanels, im.mr, im.mc, im.chunk)
	nChunks := ceilDiv(nPanels, chunk)
	items := ceilDiv(s.m, mc) * nChunks
	parallelFor(min(threads, items), items, func(item, w int) {
		buf := *scratch[w]
		i0 := (item / nChunks) * mc
		jp0 := (item % nChunks) * chunk
		s.item(i0, min(mc, s.m-i0), jp0, min(jp0+chunk, nPanels), buf[:aLen], buf[aLen:aLen+kcMax*nr], buf[aLen+kcMax*nr:])
	})
}

// itemsPerThread is how many work items each goroutine should have to choose
// from, so that uneven items still balance.
const itemsPerThread = 4

// itemGrid returns the rows (a multiple of mr) and B panels of one work
// item: mc and chunk, halved (columns first) until there are
// itemsPerThread·threads items or an item is one tile. Only the speed
// depends on it: every tile is computed the same way whichever item holds it.
func itemGrid(threads, m, nPanels, mr, mc, chunk int) (int, int) {
	mc = min(mc, ceilDiv(m, mr)*mr)
	chunk = min(chunk, nPanels)
	want := itemsPerThread * threads
	if threads <= 1 {
		return mc, chunk
	}
	for ceilDiv(m, mc)*ceilDiv(nPanels, chunk) < want {
		switch {
		case chunk > 1:
			chunk = ceilDiv(chunk, 2)
		case mc > mr:
			mc = max(mr, mc/2/mr*mr)
		default:
			return mc, chunk
		}
	}
	return mc, chunk
}

// item computes rows [i0, i0+mb) of C against the slab's panels [jp0, jp1),
// one depth pass of kc rows at a time.
func (s *slab[T]) item(i0, mb, jp0, jp1 int, aBuf, bEdge, tile []T) {
	im, mr, nr := s.im, s.im.mr, s.im.nr
	a, lda, b, ldb, c, ldc := s.a, s.lda, s.b, s.ldb, s.c, s.ldc
	m, n, tA, alpha := s.m, s.n, s.tA, s.alpha
	packA := jp1-jp0 >= im.packAMinPanels
	if tA {
		packA = jp1-jp0 >= im.packATransMinPanels
	}
	// The last two tiles against each block of B ask each half of the next
	// block into cache (a lone tile, the first half): tiles from firstTold.
	firstTold := max(ceilDiv(mb, mr)-2, 0)
	for pc := s.p0; pc < s.p0+s.kg; pc += im.kc {
		kb := min(im.kc, s.p0+s.kg-pc)
		bet := s.beta
		if pc > 0 {
			bet = 1
		}
		if packA {
			for ip := 0; ip*mr < mb; ip++ {
				packAPanel(tA, a, lda, i0+ip*mr, min(mr, mb-ip*mr), pc, kb, mr, aBuf[ip*kb*mr:(ip+1)*kb*mr])
			}
		} else if last := mb - mb%mr; last < mb {
			packAPanel(tA, a, lda, i0+last, mb-last, pc, kb, mr, aBuf[:kb*mr])
		}
		for jp := jp0; jp < jp1; jp++ {
			j0 := s.j0 + jp*nr
			nb := min(nr, n-j0)
			var bp []T
			ldbp := nr
			switch {
			case s.packB:
				bp = s.bPacked[jp*s.kg*nr+(pc-s.p0)*nr : (jp+1)*s.kg*nr]
			case nb == nr:
				bp, ldbp = b[pc*ldb+j0:], ldb
			default:
				bp = bEdge[:kb*nr]
				packBPanel(false, b, ldb, pc, kb, j0, nb, nr, bp)
			}
			nextB := s.nextBlock(jp, pc, jp0, jp1)
			for ip := 0; ip*mr < mb; ip++ {
				i := i0 + ip*mr
				mi := min(mr, m-i)
				var next []T
				if h := ip - firstTold; len(nextB) > 0 && h >= 0 {
					next = nextB[h*len(nextB)/2:]
				}
				ap, rsa, csa := aBuf[:kb*mr], 1, mr
				switch {
				case packA:
					ap = aBuf[ip*kb*mr : (ip+1)*kb*mr]
				case mi < mr:
				case tA:
					ap, rsa, csa = a[pc*lda+i:], 1, lda
				default:
					ap, rsa, csa = a[i*lda+pc:], lda, 1
				}
				if mi == mr && nb == nr {
					im.kernel(kb, ap, rsa, csa, bp, ldbp, c[i*ldc+j0:], ldc, alpha, bet, next)
					continue
				}
				// Edge tile: run the same kernel on a padded copy so that
				// every element sees exactly the arithmetic of a full tile.
				if bet != 0 {
					for ii := range mi {
						copy(tile[ii*nr:ii*nr+nb], c[(i+ii)*ldc+j0:][:nb])
					}
				}
				im.kernel(kb, ap, rsa, csa, bp, ldbp, tile, nr, alpha, bet, next)
				for ii := range mi {
					copy(c[(i+ii)*ldc+j0:][:nb], tile[ii*nr:ii*nr+nb])
				}
			}
		}
	}
}

// nextBlock is the block of packed B that item (panels [jp0, jp1)) runs
// after panel jp's depth pass at pc: the next panel's pass, or after the
// last panel the first one's next pass; nil when there is none or B is not
// packed.
func (s *slab[T]) nextBlock(jp, pc, jp0, jp1 int) []T {
	if !s.packB {
		return nil
	}
	kc, nr := s.im.kc, s.im.nr
	switch {
	case jp+1 < jp1:
		return s.bPacked[(jp+1)*s.kg*nr+(pc-s.p0)*nr:][:min(kc, s.p0+s.kg-pc)*nr]
	case pc+kc < s.p0+s.kg:
		return s.bPacked[jp0*s.kg*nr+(pc+kc-s.p0)*nr:][:min(kc, s.p0+s.kg-pc-kc)*nr]
	}
	return nil
}

// swapGemm computes T = op(B)ᵀ·op(A)ᵀ (n×m) with gemm, then
// C = alpha·Tᵀ + beta·C. The choice depends on the shape only, so results
// stay independent of par.
func swapGemm[T float](im *gemmImpl[T], par Par, tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	buf := im.getBuf(n * m)
	defer im.putBuf(buf)
	t := *buf
	gemm(im, par, !tB, !tA, n, m, k, 1, b, ldb, a, lda, 0, t, m)
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			for j := range row {
				row[j] = alpha * t[j*m+i]
			}
			continue
		}
		for j := range row {
			row[j] = alpha*t[j*m+i] + beta*row[j]
		}
	}
}

// scaleC sets C = beta·C; beta == 0 overwrites C with zeros (NaNs included).
func scaleC[T float](m, n int, beta T, c []T, ldc int) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
}
