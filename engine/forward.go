package engine

// net is one pass's view of the weights: the base model, an optional adapter
// and optional gradient accumulators (gm for full-parameter training, gad for
// the adapter). It holds no state between passes.
type net[T Float] struct {
	m    *Model[T]
	ad   *Adapter[T] // nil: base model only
	gm   *Model[T]   // nil: base frozen
	gad  *Adapter[T] // nil: adapter frozen
	p    par
	rope rope[T]
}

// numKinds sizes per-kind arrays (kindQ … kindUnembed).
const numKinds = int(kindUnembed) + 1

// layerActs caches one block's activations for the backward pass, each
// n×width row-major: per token 4·Dim + 2·QDim + 2·KVDim + 4·Hidden values
// (plus QDim + KVDim pre-norm q, k with Config.QKNorm), 2 norms (plus
// Heads + KVHeads with QKNorm), Heads·(keys it attends to) attention
// probabilities, and Rank per adapted projection.
type layerActs[T Float] struct {
	xin, xn1, xmid, xn2 []T // n×Dim
	q, ao               []T // n×QDim (q rotated)
	k, v                []T // n×KVDim (k rotated)
	qpre, kpre          []T // n×QDim, n×KVDim: q, k before their norm (QKNorm only)
	rsq, rsk            []T // n·Heads, n·KVHeads: their inverse RMS (QKNorm only)
	g, u, h, sg         []T // n×Hidden (sg = σ(g))
	rs1, rs2            []T // n
	probs               []T // Σ over spans of Heads·span.size
	lu                  [numKinds][]T
}

// pick asks a forward pass for the log-probability of token target at
// packed row row.
type pick struct{ row, target int }

// acts is the workspace of one pass: the packed batch and every cached
// activation. Buffers are reused from pass to pass. Memory for a batch of N
// packed rows (a shared prefix counts once) in sequences of length L: about
// Layers·N·(4·Dim + 2·QDim + 2·KVDim + 4·Hidden + Heads·L) + 2·N·Dim
// elements, plus one chunk of logits (see [logitRows]), never N×Vocab; for
// the default config that is about 50 KiB per token in float32 (≈ 150 MiB
// for 3,000 tokens).
type acts[T Float] struct {
	n         int
	tokens    []int
	pos       []int
	spans     []span
	rows      []exRow // per example of the micro-batch (trainer only)
	nprobs    int     // len(probs) of every layer, all heads
	layers    []layerActs[T]
	xfin      []T
	xnf       []T
	rsf       []T
	logits    []T // one chunk of rows×Vocab logits (or their gradient), reused
	luU       []T // n×Rank: the unembedding adapter's x·Aᵀ
	lse       []float64
	picks     []pick    // set by the caller before the forward
	pickLP    []float64 // per pick: its log-probability
	last      []T       // with keepLast: the last row's logits (Vocab)
	keepLast  bool
	chunkRows int              // rows per chunk of logits; 0 means logitRows(Vocab)
	topK      int              // > 0: collect each row's topK most likely tokens
	top       [][]TokenLogprob // with topK: per row, most likely first
	scratch   struct{ a, b []T }
	bw        backScratch[T]
}

func (nt *net[T]) lin(i int, k kind) linear[T] {
	c := nt.m.Config
	d, h, q, kv := c.Dim, c.Hidden, c.QDim(), c.KVDim()
	l := linear[T]{}
	var b *Block[T]
	var gb *Block[T]
	var ab, gab *BlockAdapter[T]
	if i >= 0 {
		b = &nt.m.Blocks[i]
		if nt.gm != nil {
			gb = &nt.gm.Blocks[i]
		}
		if nt.ad != nil {
			ab = &nt.ad.Blocks[i]
		}
		if nt.gad != nil {
			gab = &nt.gad.Blocks[i]
		}
	}
	pick := func(out, in int, wf func(*Block[T]) []T, bf func(*Block[T]) []T, ap func(*BlockAdapter[T]) *LoraPair[T]) {
		l.w, l.out, l.in = dense[T]{w: wf(b), out: out, in: in}, out, in
		if w16 := nt.m.frozen16(i, k, out, in); w16 != nil {
			l.w = w16
		}
		if bf != nil {
			l.bias = bf(b)
		}
		if gb != nil {
			l.gw = wf(gb)
			if bf != nil {
				l.gb = bf(gb)
			}
		}
		if ab != nil {
			l.lp = ap(ab)
		}
		if gab != nil {
			l.glp = ap(gab)
		}
	}
	var qb, kb, vb, ob func(*Block[T]) []T
	if c.QKVBias {
		qb = func(b *Block[T]) []T { return b.QBias }
		kb = func(b *Block[T]) []T { return b.KBias }
		vb = func(b *Block[T]) []T { return b.VBias }
	}
	if c.OBias {
		ob = func(b *Block[T]) []T { return b.OBias }
	}
	switch k {
	case kindQ:
		pick(q, d, func(b *Block[T]) []T { return b.Q }, qb, func(a *BlockAdapter[T]) *LoraPair[T] { return a.Q })
	case kindK:
		pick(kv, d, func(b *Block[T]) []T { return b.K }, kb, func(a *BlockAdapter[T]) *LoraPair[T] { return a.K })
	case kindV:
		pick(kv, d, func(b *Block[T]) []T { return b.V }, vb, func(a *BlockAdapter[T]) *LoraPair[T] { return a.V })
	case kindO:
		pick(d, q, func(b *Block[T]) []T { return b.O }, ob, func(a *BlockAdapter[T]) *LoraPair[T] { return a.O })
	case kindGate:
		pick(h, d, func(b *Block[T]) []T { return b.Gate }, nil, func(a *BlockAdapter[T]) *LoraPair[T] { return a.Gate })
	case kindUp:
		pick(h, d, func(b *Block[T]) []T { return b.Up }, nil, func(a *BlockAdapter[T]) *LoraPair[T] { return a.Up })
	case kindDown:
		pick(d, h, func(b *Block[T]) []T { return b.Down }, nil, func(a *BlockAdapter[T]) *LoraPair[T] { return a.Down })
	case kindUnembed:
		w := nt.m.unembed()
		l.w, l.out, l.in = dense[T]{w: w, out: c.Vocab, in: d}, c.Vocab, d
		if w16 := nt.m.frozen16(-1, kindUnembed, c.Vocab, d); w16 != nil {
			l.w = w16
		}
		if nt.gm != nil {
			l.gw = nt.gm.unembed() // tied: the embedding's gradient
		}
		if nt.ad != nil {
			l.lp = nt.ad.Unembed
		}
		if nt.gad != nil {
			l.glp = nt.gad.Unembed
		}
	}
	if l.lp == nil {
		l.glp = nil
	} else if nt.ad != nil {
		l.scale = T(nt.ad.Lora.Scale())
	}
	return l
}

// forward packs seqs one after the other and runs the model over them (see
// forwardPacked). Tokens must already be validated.
func (nt *net[T]) forward(a *acts[T], seqs [][]int) {
	a.pack(seqs, nt.m.Config.Heads)
	nt.forwardPacked(a)
}

// forwardPacked runs the model over the batch packed in a and leaves every
// activation, the log-sum-exp of every row's logits and the log-probability
// of each of a.picks in a.pickLP (and, with a.keepLast, the last row's
// logits in a.last). The logits are computed in chunks of rows and not kept.
func (nt *net[T]) forwardPacked(a *acts[T]) {
	c := nt.m.Config
	d, hid, n, eps := c.Dim, c.Hidden, a.n, c.normEps()
	qd, kvd, hd := c.QDim(), c.KVDim(), c.headDim()
	if len(a.layers) != c.Layers {
		a.layers = make([]layerActs[T], c.Layers)
	}
	x := grow(a.scratch.a, n*d, false)
	a.scratch.a = x
	emb := nt.m.embedding()
	for i, t := range a.tokens {
		emb.row(t, x[i*d:(i+1)*d])
	}
	pos := func(i int) int { return a.pos[i] }
	for li := range nt.m.Blocks {
		b, la := &nt.m.Blocks[li], &a.layers[li]
		la.xin = append(la.xin[:0], x...)
		la.xn1 = grow(la.xn1, n*d, false)
		la.rs1 = grow(la.rs1, n, false)
		rmsnorm(n, d, x, b.AttnNorm, la.xn1, la.rs1, eps)
		la.q, la.k, la.v = grow(la.q, n*qd, false), grow(la.k, n*kvd, false), grow(la.v, n*kvd, false)
		if c.QKNorm {
			la.qpre, la.kpre = grow(la.qpre, n*qd, false), grow(la.kpre, n*kvd, false)
			la.rsq, la.rsk = grow(la.rsq, n*c.Heads, false), grow(la.rsk, n*c.kvHeads(), false)
			nt.lin(li, kindQ).apply(nt.p, n, la.xn1, la.qpre, &la.lu[kindQ])
			nt.lin(li, kindK).apply(nt.p, n, la.xn1, la.kpre, &la.lu[kindK])
			rmsnorm(n*c.Heads, hd, la.qpre, b.QNorm, la.q, la.rsq, eps)
			rmsnorm(n*c.kvHeads(), hd, la.kpre, b.KNorm, la.k, la.rsk, eps)
		} else {
			nt.lin(li, kindQ).apply(nt.p, n, la.xn1, la.q, &la.lu[kindQ])
			nt.lin(li, kindK).apply(nt.p, n, la.xn1, la.k, &la.lu[kindK])
		}
		nt.lin(li, kindV).apply(nt.p, n, la.xn1, la.v, &la.lu[kindV])
		ropeRows(nt.rope, c.Heads, hd, n, la.q, pos, false)
		ropeRows(nt.rope, c.kvHeads(), hd, n, la.k, pos, false)
		la.ao = grow(la.ao, n*qd, false)
		la.probs = grow(la.probs, a.nprobs, false)
		attnForward(nt.p, c, a.spans, la.q, la.k, la.v, la.ao, la.probs)
		y := grow(a.scratch.b, n*d, false)
		a.scratch.b = y
		nt.lin(li, kindO).apply(nt.p, n, la.ao, y, &la.lu[kindO])
		for i := range x {
			x[i] += y[i]
		}
		la.xmid = append(la.xmid[:0], x...)
		la.xn2 = grow(la.xn2, n*d, false)
		la.rs2 = grow(la.rs2, n, false)
		rmsnorm(n, d, x, b.MLPNorm, la.xn2, la.rs2, eps)
		la.g, la.u, la.h = grow(la.g, n*hid, false), grow(la.u, n*hid, false), grow(la.h, n*hid, false)
		nt.lin(li, kindGate).apply(nt.p, n, la.xn2, la.g, &la.lu[kindGate])
		nt.lin(li, kindUp).apply(nt.p, n, la.xn2, la.u, &la.lu[kindUp])
		la.sg = grow(la.sg, n*hid, false)
		swiglu(nt.p, la.g, la.u, la.h, la.sg)
		nt.lin(li, kindDown).apply(nt.p, n, la.h, y, &la.lu[kindDown])
		for i := range x {
			x[i] += y[i]
		}
	}
	a.xfin = append(a.xfin[:0], x...)
	a.xnf, a.rsf = grow(a.xnf, n*d, false), grow(a.rsf, n, false)
	rmsnorm(n, d, x, nt.m.FinalNorm, a.xnf, a.rsf, eps)
	nt.headForward(a)
}
