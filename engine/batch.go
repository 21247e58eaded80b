package engine

// The batched forward of the continuous-batching sampler: one step runs
// rows from many sequences (decode rows and chunks of prompts, of any
// calls and adapter versions) through the model at once.
//
// Batch invariance. Every operation of a step is a function of one row
// alone: embedding, RMSNorm, biases, rotary positions, SwiGLU and the
// residual adds are elementwise or per row; attention reads that row's own
// keys in position order (a prompt row its call's prompt keys up to its
// own position, a decode row the prompt's keys then its sequence's own;
// batchattn.go); and every matrix product is issued in blocks of at most
// batchRows rows. The kernels compute x·Wᵀ for at most 16 rows (24 for
// AVX2 float32 and every float64 kernel, 96 for AVX-512 float32 and
// bfloat16 or float16 weights without AMX, which compute float32's very
// products; 16, the smallest, for AMX and for activations rounded to
// bfloat16) on
// their dot-product route, where each output element is the dot product of
// one row of x with one row of W summed in a lane order fixed by the inner
// dimension alone; the portable kernels have no such route and compute
// every element in its own register lane in depth order
// (engine/kernels/doc.go). Either way a row's result does not depend on
// which rows share its block, nor on the block's size, position or thread
// count (TestProductRowsBatchInvariant checks it; 17 rows would break it).
// So a row computes the same bits whatever else the step holds, and a
// call's tokens and log-probs are the same alone or batched with any
// others. The same property lets calls share cached prompt rows: a row's
// bits depend on the tokens up to it and the adapter only.
//
// Versions. The base product runs over all rows; the LoRA delta
// s·(x·Aᵀ)·Bᵀ is added per group of rows that share one adapter (rows are
// ordered by group), again in blocks of at most batchRows rows, so each row
// gets exactly its own version's delta.

// batchRows bounds the rows of every matrix product a step issues: at most
// the smallest dot-route bound of the kernels (see above).
const batchRows = 16

// stepRow is one row of a batched step: token tok at position pos of a
// call's sequence s, or of its prompt when s is nil.
type stepRow[T Float] struct {
	c      *call[T]
	s      *seqState[T] // nil: a prompt row
	pos    int
	tok    int
	logits bool // the head runs on this row
}

// rowGroup is rows [lo, hi) of a step that share the adapter ad (nil: the
// base alone).
type rowGroup[T Float] struct {
	lo, hi int
	ad     *Adapter[T]
}

// batch is the workspace of batched steps, reused from step to step; it is
// used by one goroutine (the scheduler's).
type batch[T Float] struct {
	cfg  Config
	m    *Model[T]
	p    par
	rope rope[T]

	x, xn, q, k, v, qn, kn, ao, y, g, u, h, lu, rs, hx, logits []T
}

func newBatch[T Float](m *Model[T], p par, r rope[T]) *batch[T] {
	return &batch[T]{cfg: m.Config, m: m, p: p, rope: r}
}

// minBlockWork is the least multiply-adds of a block that earns a
// goroutine of its own (about 20 µs): waking one costs microseconds.
const minBlockWork = 1 << 18

// blocks calls fn on consecutive blocks [lo, hi) of at most batchRows of
// the n rows, each rowWork multiply-adds a row. Several blocks of enough
// work are handed out to b.p's goroutines (each block then runs its
// product on one goroutine); otherwise they run in turn, each with all of
// b.p (sub is the par for the block's products). Results do not depend on
// which.
func (b *batch[T]) blocks(n, rowWork int, fn func(sub par, lo, hi int)) {
	nb := (n + batchRows - 1) / batchRows
	if nb <= 1 || b.p.threads <= 1 || batchRows*rowWork < minBlockWork {
		for lo := 0; lo < n; lo += batchRows {
			fn(b.p, lo, min(lo+batchRows, n))
		}
		return
	}
	b.p.forEach(nb, 1, func(blo, bhi int) {
		for bi := blo; bi < bhi; bi++ {
			fn(par{}, bi*batchRows, min((bi+1)*batchRows, n))
		}
	})
}

// linear computes y = x·Wᵀ + bias for the m rows of x, then adds each
// group's LoRA delta to its rows: layer l's kind k (l = -1: the head).
func (b *batch[T]) linear(l int, k kind, groups []rowGroup[T], m int, x, y []T) {
	base := (&net[T]{m: b.m}).lin(l, k)
	in, out := base.in, base.out
	b.blocks(m, in*out, func(sub par, lo, hi int) {
		base.w.mulT(sub, hi-lo, x[lo*in:hi*in], 0, y[lo*out:hi*out])
	})
	if base.bias != nil {
		for i := range m {
			yi := y[i*out : (i+1)*out]
			for j, bv := range base.bias {
				yi[j] += bv
			}
		}
	}
	for _, g := range groups {
		if g.ad == nil {
			continue
		}
		al := (&net[T]{m: b.m, ad: g.ad}).lin(l, k)
		if al.lp == nil {
			continue
		}
		r := al.lp.Rank
		b.lu = grow(b.lu, m*r, false)
		u := b.lu
		b.blocks(g.hi-g.lo, r*(in+out), func(sub par, lo, hi int) {
			lo, hi = lo+g.lo, hi+g.lo
			gemm(sub, false, true, hi-lo, r, in, 1, x[lo*in:hi*in], in, al.lp.A, in, 0, u[lo*r:hi*r], r)
			gemm(sub, false, true, hi-lo, out, r, al.scale, u[lo*r:hi*r], r, al.lp.B, r, 1, y[lo*out:hi*out], out)
		})
	}
}

// forward runs rows (ordered so that each group's rows are contiguous)
// through the model, writing each row's key and value into its cache slot,
// and calls head(r, logits) for every row with logits set, in row order
// within each group (head must not keep the slice).
func (b *batch[T]) forward(rows []stepRow[T], groups []rowGroup[T], head func(r int, logits []T)) {
	cfg := b.cfg
	dim, hid, m, eps := cfg.Dim, cfg.Hidden, len(rows), cfg.normEps()
	qd, kvd, hd, nkv := cfg.QDim(), cfg.KVDim(), cfg.headDim(), cfg.kvHeads()
	b.x, b.xn, b.y = grow(b.x, m*dim, false), grow(b.xn, m*dim, false), grow(b.y, m*dim, false)
	b.q, b.k, b.v, b.ao = grow(b.q, m*qd, false), grow(b.k, m*kvd, false), grow(b.v, m*kvd, false), grow(b.ao, m*qd, false)
	b.g, b.u, b.h = grow(b.g, m*hid, false), grow(b.u, m*hid, false), grow(b.h, m*hid, false)
	b.rs = grow(b.rs, m*max(1, cfg.Heads, nkv), false)
	emb := b.m.embedding()
	for r, rw := range rows {
		emb.row(rw.tok, b.x[r*dim:(r+1)*dim])
	}
	at := func(i int) int { return rows[i].pos }
	for l := range b.m.Blocks {
		blk := &b.m.Blocks[l]
		rmsnorm(m, dim, b.x, blk.AttnNorm, b.xn, b.rs, eps)
		if cfg.QKNorm {
			b.qn, b.kn = grow(b.qn, m*qd, false), grow(b.kn, m*kvd, false)
			b.linear(l, kindQ, groups, m, b.xn, b.qn)
			b.linear(l, kindK, groups, m, b.xn, b.kn)
			rmsnorm(m*cfg.Heads, hd, b.qn, blk.QNorm, b.q, b.rs, eps)
			rmsnorm(m*nkv, hd, b.kn, blk.KNorm, b.k, b.rs, eps)
		} else {
			b.linear(l, kindQ, groups, m, b.xn, b.q)
			b.linear(l, kindK, groups, m, b.xn, b.k)
		}
		b.linear(l, kindV, groups, m, b.xn, b.v)
		ropeRows(b.rope, cfg.Heads, hd, m, b.q, at, false)
		ropeRows(b.rope, nkv, hd, m, b.k, at, false)
		for r, rw := range rows {
			kc, vc := rw.cache(l)
			copy(kc, b.k[r*kvd:(r+1)*kvd])
			copy(vc, b.v[r*kvd:(r+1)*kvd])
		}
		b.attend(l, rows)
		b.linear(l, kindO, groups, m, b.ao, b.y)
		for i := range b.x {
			b.x[i] += b.y[i]
		}
		rmsnorm(m, dim, b.x, blk.MLPNorm, b.xn, b.rs, eps)
		b.linear(l, kindGate, groups, m, b.xn, b.g)
		b.linear(l, kindUp, groups, m, b.xn, b.u)
		swiglu(b.p, b.g, b.u, b.h, nil)
		b.linear(l, kindDown, groups, m, b.h, b.y)
		for i := range b.x {
			b.x[i] += b.y[i]
		}
	}
	rmsnorm(m, dim, b.x, b.m.FinalNorm, b.xn, b.rs, eps)
	b.head(rows, groups, head)
}

// head computes the logits of the rows that ask for them, a block of at
// most batchRows rows of one group at a time, and hands each to fn.
func (b *batch[T]) head(rows []stepRow[T], groups []rowGroup[T], fn func(r int, logits []T)) {
	dim, vocab := b.cfg.Dim, b.cfg.Vocab
	idx := make([]int, 0, batchRows)
	flush := func(g rowGroup[T]) {
		if len(idx) == 0 {
			return
		}
		n := len(idx)
		b.hx = grow(b.hx, n*dim, false)
		for i, r := range idx {
			copy(b.hx[i*dim:(i+1)*dim], b.xn[r*dim:(r+1)*dim])
		}
		b.logits = grow(b.logits, n*vocab, false)
		b.linear(-1, kindUnembed, []rowGroup[T]{{lo: 0, hi: n, ad: g.ad}}, n, b.hx, b.logits)
		for i, r := range idx {
			fn(r, b.logits[i*vocab:(i+1)*vocab])
		}
		idx = idx[:0]
	}
	for _, g := range groups {
		for r := g.lo; r < g.hi; r++ {
			if !rows[r].logits {
				continue
			}
			idx = append(idx, r)
			if len(idx) == batchRows {
				flush(g)
			}
		}
		flush(g)
	}
}

// cache returns the slots of layer l's key and value caches that row rw
// writes: its prompt position, or its sequence's generated slot.
func (rw *stepRow[T]) cache(l int) (k, v []T) {
	kvd := rw.c.kvd
	if rw.s == nil {
		off := rw.pos * kvd
		return rw.c.kv.k[l][off : off+kvd], rw.c.kv.v[l][off : off+kvd]
	}
	off := (rw.pos - rw.c.tp) * kvd
	return rw.s.gk[l][off : off+kvd], rw.s.gv[l][off : off+kvd]
}

// keyRange is n cached positions of one KV head: key j is
// k[j·kvd+k0:][:hd], its value likewise in v.
type keyRange[T Float] struct {
	k, v        []T
	n           int
	kvd, k0, hd int
}

func (kr keyRange[T]) key(j int) []T { return kr.k[j*kr.kvd+kr.k0 : j*kr.kvd+kr.k0+kr.hd] }
func (kr keyRange[T]) val(j int) []T { return kr.v[j*kr.kvd+kr.k0 : j*kr.kvd+kr.k0+kr.hd] }

// attendRow writes softmax(q·kⱼ·scale)·vⱼ over the keys of a then those
// of b into out, one dot product per key and the softmax in float64; sc
// is scratch, returned.
func attendRow[T Float](q []T, scale float64, a, b keyRange[T], out, sc []T) []T {
	nk := a.n + b.n
	sc = grow(sc, nk, false)
	for j := 0; j < a.n; j++ {
		sc[j] = T(float64(dot(q, a.key(j))) * scale)
	}
	for j := 0; j < b.n; j++ {
		sc[a.n+j] = T(float64(dot(q, b.key(j))) * scale)
	}
	softmaxRow(sc[:nk])
	clear(out)
	for j := 0; j < a.n; j++ {
		axpy(sc[j], a.val(j), out)
	}
	for j := 0; j < b.n; j++ {
		axpy(sc[a.n+j], b.val(j), out)
	}
	return sc
}
