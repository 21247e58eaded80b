package engine

// backScratch holds the backward pass's temporary gradients, reused.
type backScratch[T Float] struct {
	dx, dxn    []T // n×Dim
	dao, dq    []T // n×QDim
	dk, dv     []T // n×KVDim
	dqn, dkn   []T // n×QDim, n×KVDim: gradients before the q/k norms (QKNorm)
	dh, dg, du []T // n×Hidden
	tmp        []T // n×Rank
	csum       []float64
	live       []bool
}

// term is one loss term on a packed row: coef is the derivative of the loss
// with respect to the log-probability of target at that row. A row shared by
// several examples (a shared prefix) carries one term per example.
type term struct {
	row, target int
	coef        float64
}

// backward propagates the loss gradient through the pass recorded in a and
// accumulates parameter gradients into nt.gm / nt.gad. terms are the loss's
// derivatives with respect to target log-probabilities, any number per row.
// It reuses a.logits for one chunk of logit gradients at a time.
func (nt *net[T]) backward(a *acts[T], terms []term) {
	c := nt.m.Config
	d, hid, n, hd := c.Dim, c.Hidden, a.n, c.headDim()
	qd, kvd, nkv := c.QDim(), c.KVDim(), c.kvHeads()
	bw := &a.bw
	if cap(bw.csum) < n {
		bw.csum, bw.live = make([]float64, n), make([]bool, n)
	}
	csum, live := bw.csum[:n], bw.live[:n]
	clear(csum)
	clear(live)
	for _, tm := range terms {
		if tm.coef != 0 {
			csum[tm.row] += tm.coef
			live[tm.row] = true
		}
	}
	bw.dxn = grow(bw.dxn, n*d, false)
	bw.dx = grow(bw.dx, n*d, true)
	nt.headBackward(a, terms, csum, live, bw.dxn)
	rmsnormBack(n, d, bw.dxn, a.xfin, nt.m.FinalNorm, a.rsf, bw.dx, gradOf(nt.gm, func(m *Model[T]) []T { return m.FinalNorm }))
	bw.dh, bw.dg, bw.du = grow(bw.dh, n*hid, false), grow(bw.dg, n*hid, false), grow(bw.du, n*hid, false)
	bw.dao, bw.dq = grow(bw.dao, n*qd, false), grow(bw.dq, n*qd, false)
	bw.dk, bw.dv = grow(bw.dk, n*kvd, false), grow(bw.dv, n*kvd, false)
	pos := func(i int) int { return a.pos[i] }
	for li := c.Layers - 1; li >= 0; li-- {
		b, la := &nt.m.Blocks[li], &a.layers[li]
		var gb *Block[T]
		if nt.gm != nil {
			gb = &nt.gm.Blocks[li]
		}
		// MLP
		nt.lin(li, kindDown).backward(nt.p, n, bw.dx, la.h, la.lu[kindDown], bw.dh, 0, &bw.tmp)
		swigluBack(nt.p, la.g, la.u, la.sg, bw.dh, bw.dg, bw.du)
		nt.lin(li, kindGate).backward(nt.p, n, bw.dg, la.xn2, la.lu[kindGate], bw.dxn, 0, &bw.tmp)
		nt.lin(li, kindUp).backward(nt.p, n, bw.du, la.xn2, la.lu[kindUp], bw.dxn, 1, &bw.tmp)
		rmsnormBack(n, d, bw.dxn, la.xmid, b.MLPNorm, la.rs2, bw.dx, blockGrad(gb, func(b *Block[T]) []T { return b.MLPNorm }))
		// attention
		nt.lin(li, kindO).backward(nt.p, n, bw.dx, la.ao, la.lu[kindO], bw.dao, 0, &bw.tmp)
		attnBackward(nt.p, c, a.spans, la.q, la.k, la.v, la.probs, bw.dao, bw.dq, bw.dk, bw.dv)
		ropeRows(nt.rope, c.Heads, hd, n, bw.dq, pos, true)
		ropeRows(nt.rope, nkv, hd, n, bw.dk, pos, true)
		dq, dk := bw.dq, bw.dk
		if c.QKNorm {
			bw.dqn, bw.dkn = grow(bw.dqn, n*qd, true), grow(bw.dkn, n*kvd, true)
			rmsnormBack(n*c.Heads, hd, bw.dq, la.qpre, b.QNorm, la.rsq, bw.dqn, blockGrad(gb, func(b *Block[T]) []T { return b.QNorm }))
			rmsnormBack(n*nkv, hd, bw.dk, la.kpre, b.KNorm, la.rsk, bw.dkn, blockGrad(gb, func(b *Block[T]) []T { return b.KNorm }))
			dq, dk = bw.dqn, bw.dkn
		}
		// The first block's input gradient feeds only the embedding: skip it
		// when the base is frozen.
		var dxn []T
		if li > 0 || nt.gm != nil {
			dxn = bw.dxn
		}
		nt.lin(li, kindQ).backward(nt.p, n, dq, la.xn1, la.lu[kindQ], dxn, 0, &bw.tmp)
		nt.lin(li, kindK).backward(nt.p, n, dk, la.xn1, la.lu[kindK], dxn, 1, &bw.tmp)
		nt.lin(li, kindV).backward(nt.p, n, bw.dv, la.xn1, la.lu[kindV], dxn, 1, &bw.tmp)
		if dxn != nil {
			rmsnormBack(n, d, dxn, la.xin, b.AttnNorm, la.rs1, bw.dx, blockGrad(gb, func(b *Block[T]) []T { return b.AttnNorm }))
		}
	}
	if nt.gm != nil {
		for i, t := range a.tokens {
			axpy(1, bw.dx[i*d:(i+1)*d], nt.gm.Embed[t*d:(t+1)*d])
		}
	}
}

func gradOf[T Float](m *Model[T], f func(*Model[T]) []T) []T {
	if m == nil {
		return nil
	}
	return f(m)
}

func blockGrad[T Float](b *Block[T], f func(*Block[T]) []T) []T {
	if b == nil {
		return nil
	}
	return f(b)
}
