package engine

import "math"

// backScratch holds the backward pass's temporary gradients, reused.
type backScratch[T Float] struct {
	dx, dxn, dao, dq, dk, dv []T // n×Dim
	dh, dg, du               []T // n×Hidden
	tmp                      []T // n×Rank
}

// backward propagates the loss gradient through the pass recorded in a and
// accumulates parameter gradients into nt.gm / nt.gad. coef[i] is dLoss/dp_i,
// the derivative of the loss with respect to the log-probability of
// targets[i] at packed row i. It overwrites a.logits with their gradient.
func (nt *net[T]) backward(a *acts[T], targets []int, coef []float64) {
	c := nt.m.Config
	d, hid, vocab, n := c.Dim, c.Hidden, c.Vocab, a.n
	bw := &a.bw
	// dlogits = coef·(onehot(target) − softmax)
	for i := 0; i < n; i++ {
		row := a.logits[i*vocab : (i+1)*vocab]
		ci := coef[i]
		if ci == 0 {
			clear(row)
			continue
		}
		lse := a.lse[i]
		for v := range row {
			row[v] = T(-ci * math.Exp(float64(row[v])-lse))
		}
		row[targets[i]] += T(ci)
	}
	bw.dxn = grow(bw.dxn, n*d, false)
	bw.dx = grow(bw.dx, n*d, true)
	nt.lin(-1, kindUnembed).backward(nt.p, n, a.logits, a.xnf, a.luU, bw.dxn, 0, &bw.tmp)
	rmsnormBack(n, d, bw.dxn, a.xfin, nt.m.FinalNorm, a.rsf, bw.dx, gradOf(nt.gm, func(m *Model[T]) []T { return m.FinalNorm }))
	bw.dh, bw.dg, bw.du = grow(bw.dh, n*hid, false), grow(bw.dg, n*hid, false), grow(bw.du, n*hid, false)
	bw.dao, bw.dq = grow(bw.dao, n*d, false), grow(bw.dq, n*d, false)
	bw.dk, bw.dv = grow(bw.dk, n*d, false), grow(bw.dv, n*d, false)
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
		attnBackward(nt.p, c, headSpans(a.spans, c.Heads), la.q, la.k, la.v, la.probs, bw.dao, bw.dq, bw.dk, bw.dv)
		ropeRows(nt.rope, c, n, bw.dq, pos, true)
		ropeRows(nt.rope, c, n, bw.dk, pos, true)
		// The first block's input gradient feeds only the embedding: skip it
		// when the base is frozen.
		var dxn []T
		if li > 0 || nt.gm != nil {
			dxn = bw.dxn
		}
		nt.lin(li, kindQ).backward(nt.p, n, bw.dq, la.xn1, la.lu[kindQ], dxn, 0, &bw.tmp)
		nt.lin(li, kindK).backward(nt.p, n, bw.dk, la.xn1, la.lu[kindK], dxn, 1, &bw.tmp)
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
