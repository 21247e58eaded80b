package engine

import "math"

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
// n×width row-major: per token 8·Dim + 4·Hidden values, plus 2 norms, plus
// Heads·(keys it attends to) attention probabilities, plus Rank per adapted
// projection.
type layerActs[T Float] struct {
	xin, xn1, q, k, v, ao, xmid, xn2 []T // n×Dim
	g, u, h, sg                      []T // n×Hidden (sg = σ(g))
	rs1, rs2                         []T // n
	probs                            []T // Σ over spans of Heads·span.size
	lu                               [numKinds][]T
}

// acts is the workspace of one pass: the packed batch and every cached
// activation. Buffers are reused from pass to pass. Memory for a batch of N
// packed rows (a shared prefix counts once) in sequences of length L: about Layers·N·(8·Dim + 4·Hidden +
// Heads·L) + N·(Vocab + 2·Dim) elements; for the default config that is about
// 50 KiB per token in float32 (≈ 150 MiB for 3,000 tokens).
type acts[T Float] struct {
	n       int
	tokens  []int
	pos     []int
	spans   []span
	rows    []exRow // per example of the micro-batch (trainer only)
	nprobs  int     // len(probs) of every layer, all heads
	layers  []layerActs[T]
	xfin    []T
	xnf     []T
	rsf     []T
	logits  []T // n×Vocab; after backward starts, the logit gradients
	luU     []T
	lse     []float64
	scratch struct{ a, b []T }
	bw      backScratch[T]
}

func (nt *net[T]) lin(i int, k kind) linear[T] {
	c := nt.m.Config
	d, h := c.Dim, c.Hidden
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
	pick := func(w []T, out, in int, g func(*Block[T]) []T, ap func(*BlockAdapter[T]) *LoraPair[T]) {
		l.w, l.out, l.in = w, out, in
		if gb != nil {
			l.gw = g(gb)
		}
		if ab != nil {
			l.lp = ap(ab)
		}
		if gab != nil {
			l.glp = ap(gab)
		}
	}
	switch k {
	case kindQ:
		pick(b.Q, d, d, func(b *Block[T]) []T { return b.Q }, func(a *BlockAdapter[T]) *LoraPair[T] { return a.Q })
	case kindK:
		pick(b.K, d, d, func(b *Block[T]) []T { return b.K }, func(a *BlockAdapter[T]) *LoraPair[T] { return a.K })
	case kindV:
		pick(b.V, d, d, func(b *Block[T]) []T { return b.V }, func(a *BlockAdapter[T]) *LoraPair[T] { return a.V })
	case kindO:
		pick(b.O, d, d, func(b *Block[T]) []T { return b.O }, func(a *BlockAdapter[T]) *LoraPair[T] { return a.O })
	case kindGate:
		pick(b.Gate, h, d, func(b *Block[T]) []T { return b.Gate }, func(a *BlockAdapter[T]) *LoraPair[T] { return a.Gate })
	case kindUp:
		pick(b.Up, h, d, func(b *Block[T]) []T { return b.Up }, func(a *BlockAdapter[T]) *LoraPair[T] { return a.Up })
	case kindDown:
		pick(b.Down, d, h, func(b *Block[T]) []T { return b.Down }, func(a *BlockAdapter[T]) *LoraPair[T] { return a.Down })
	case kindUnembed:
		l.w, l.out, l.in = nt.m.Unembed, c.Vocab, d
		if nt.gm != nil {
			l.gw = nt.gm.Unembed
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
// activation, the logits and their log-sum-exp in a.
func (nt *net[T]) forwardPacked(a *acts[T]) {
	c := nt.m.Config
	d, hid, n, eps := c.Dim, c.Hidden, a.n, c.normEps()
	if len(a.layers) != c.Layers {
		a.layers = make([]layerActs[T], c.Layers)
	}
	x := grow(a.scratch.a, n*d, false)
	a.scratch.a = x
	for i, t := range a.tokens {
		copy(x[i*d:(i+1)*d], nt.m.Embed[t*d:(t+1)*d])
	}
	pos := func(i int) int { return a.pos[i] }
	for li := range nt.m.Blocks {
		b, la := &nt.m.Blocks[li], &a.layers[li]
		la.xin = append(la.xin[:0], x...)
		la.xn1 = grow(la.xn1, n*d, false)
		la.rs1 = grow(la.rs1, n, false)
		rmsnorm(n, d, x, b.AttnNorm, la.xn1, la.rs1, eps)
		la.q, la.k, la.v = grow(la.q, n*d, false), grow(la.k, n*d, false), grow(la.v, n*d, false)
		nt.lin(li, kindQ).apply(nt.p, n, la.xn1, la.q, &la.lu[kindQ])
		nt.lin(li, kindK).apply(nt.p, n, la.xn1, la.k, &la.lu[kindK])
		nt.lin(li, kindV).apply(nt.p, n, la.xn1, la.v, &la.lu[kindV])
		ropeRows(nt.rope, c, n, la.q, pos, false)
		ropeRows(nt.rope, c, n, la.k, pos, false)
		la.ao = grow(la.ao, n*d, false)
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
	a.logits = grow(a.logits, n*c.Vocab, false)
	nt.lin(-1, kindUnembed).apply(nt.p, n, a.xnf, a.logits, &a.luU)
	a.lse = a.lse[:0]
	for i := 0; i < n; i++ {
		a.lse = append(a.lse, logSumExp(a.logits[i*c.Vocab:(i+1)*c.Vocab]))
	}
}

// logprob returns the log-probability of token t at row i.
func (a *acts[T]) logprob(vocab, i, t int) float64 {
	return float64(a.logits[i*vocab+t]) - a.lse[i]
}

func logSumExp[T Float](x []T) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}
