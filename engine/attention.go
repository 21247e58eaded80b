package engine

import (
	"math"

	"github.com/tandemrl/tandem/engine/kernels"
)

// span is one attention unit of a packed batch: a trunk of rows [off, off+n)
// under a causal mask, and branches. A branch is a run of rows that attends
// to the whole trunk and, causally, to itself: with prefix sharing the trunk
// is the prompt the examples of a run share and each branch one example's
// continuation. A plain sequence is a span without branches.
//
// Attention probabilities of head h lie at probs[poff+h·size:][:size]: the
// trunk's n×n matrix first, then each branch's b.n×(n+b.n) matrix at b.poff
// within that block (columns: the trunk's keys, then the branch's own).
type span struct {
	off, n   int
	poff     int
	size     int
	branches []branch
}

// branch is rows [off, off+n) of a span's branch; poff is the offset of its
// probability matrix within one head's block.
type branch struct{ off, n, poff int }

// spanSize returns the number of probabilities of one head of a span with a
// trunk of n rows and the given branches, setting each branch's poff.
func spanSize(n int, brs []branch) int {
	size := n * n
	for i := range brs {
		brs[i].poff = size
		size += brs[i].n * (n + brs[i].n)
	}
	return size
}

// headView is one query head's columns of the packed q matrix (row width
// qd) and its KV head's columns of k and v (row width kd).
type headView[T Float] struct {
	qd, kd     int
	q0, k0, hd int
	scale      float64
}

func newHeadView[T Float](cfg Config, h int) headView[T] {
	hd := cfg.headDim()
	rep := cfg.Heads / cfg.kvHeads()
	return headView[T]{qd: cfg.QDim(), kd: cfg.KVDim(), q0: h * hd, k0: (h / rep) * hd, hd: hd, scale: 1 / math.Sqrt(float64(hd))}
}

func (hv headView[T]) qcol(m []T, row int) []T { return m[row*hv.qd+hv.q0 : row*hv.qd+hv.q0+hv.hd] }
func (hv headView[T]) kcol(m []T, row int) []T { return m[row*hv.kd+hv.k0 : row*hv.kd+hv.k0+hv.hd] }

// attnForward computes grouped-query attention for every span of a packed
// batch: out = softmax(q·kᵀ/√hd + mask)·v per query head h, whose keys and
// values are those of KV head h/(Heads/KVHeads) (Hugging Face's repeat_kv),
// with q and k already rotated and the mask of [span]. q and out are
// n×QDim, k and v n×KVDim. probs receives each (span, query head)'s
// probabilities (zero where masked). (span, head) pairs run in parallel,
// each as matrix products on one thread: the scores of a whole block of
// rows against its keys (the masked ones computed, then cleared), softmax
// per row, then the probabilities times the values.
func attnForward[T Float](p par, cfg Config, spans []span, q, k, v, out, probs []T) {
	nh := cfg.Heads
	p.forEach(len(spans)*nh, 1, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			s, h := &spans[task/nh], task%nh
			hv := newHeadView[T](cfg, h)
			pm := probs[s.poff+h*s.size : s.poff+(h+1)*s.size]
			hv.forwardBlock(s.off, s.n, s.off, s.n, 0, 0, pm, q, k, v, out)
			for _, b := range s.branches {
				hv.forwardBlock(b.off, b.n, s.off, s.n, b.off, b.n, pm[b.poff:], q, k, v, out)
			}
		}
	})
}

// forwardBlock attends query rows r0…r0+n−1 to key rows aOff…aOff+aN−1
// (all of them when bN > 0, else causally: row i to keys 0…i) and then,
// causally, to bOff…bOff+bN−1 (row i to its keys 0…i). Row i's
// probabilities go to pm[i·w:][:w], w = aN + bN, and its output to out's
// row r0+i.
func (hv headView[T]) forwardBlock(r0, n, aOff, aN, bOff, bN int, pm, q, k, v, out []T) {
	one := par{threads: 1}
	w, hd, sc := aN+bN, hv.hd, T(hv.scale)
	qb := q[r0*hv.qd+hv.q0:]
	gemm(one, false, true, n, aN, hd, sc, qb, hv.qd, k[aOff*hv.kd+hv.k0:], hv.kd, 0, pm, w)
	if bN > 0 {
		gemm(one, false, true, n, bN, hd, sc, qb, hv.qd, k[bOff*hv.kd+hv.k0:], hv.kd, 0, pm[aN:], w)
	}
	for i := range n {
		row := pm[i*w : (i+1)*w]
		nk := i + 1 // the causal part's keys
		if bN > 0 {
			nk = aN + i + 1
		}
		softmaxRow(row[:nk])
		clear(row[nk:])
	}
	ob := out[r0*hv.qd+hv.q0:]
	gemm(one, false, false, n, hd, aN, 1, pm, w, v[aOff*hv.kd+hv.k0:], hv.kd, 0, ob, hv.qd)
	if bN > 0 {
		gemm(one, false, false, n, hd, bN, 1, pm[aN:], w, v[bOff*hv.kd+hv.k0:], hv.kd, 1, ob, hv.qd)
	}
}

// softmaxRow replaces the scores in row by their softmax (softmaxSplit
// with one part).
func softmaxRow[T Float](row []T) { softmaxSplit(row, nil) }

// softmaxSplit replaces one row's scores, held in two parts a then b, by
// their softmax over both, in float64: each score's exponential after the
// row's maximum is subtracted, rounded to T, then times the reciprocal of
// their sum, rounded again. Every attention path computes its
// probabilities here. With float32 scores the exponentials are
// kernels.ExpShift's (AVX-512: eight at a time, about 14× math.Exp's
// rate); with float64 ones, math.Exp's in order.
func softmaxSplit[T Float](a, b []T) {
	mx := max(maxScore(a), maxScore(b))
	sum := expShift(a, mx, 1) + expShift(b, mx, 1)
	inv := 1 / sum
	for _, part := range [2][]T{a, b} {
		for j, x := range part {
			part[j] = T(float64(x) * inv)
		}
	}
}

// expShift sets x[j] = T(mul·exp(float64(x[j]) − shift)) and returns the
// sum of the exponentials in float64: kernels.ExpShift for float32, in
// order with math.Exp for float64.
func expShift[T Float](x []T, shift, mul float64) float64 {
	if x32, ok := any(x).([]float32); ok {
		return kernels.ExpShift(x32, shift, mul)
	}
	var sum float64
	for j, v := range x {
		e := math.Exp(float64(v) - shift)
		x[j] = T(mul * e)
		sum += e
	}
	return sum
}

// maxScore is the largest of x as a float64: −Inf when x is empty, NaN when
// one is NaN.
func maxScore[T Float](x []T) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		if f := float64(v); f > mx {
			mx = f
		} else if f != f {
			return f
		}
	}
	return mx
}

// attnBackward takes dout and the forward's q, k, v, probs and writes dq, dk,
// dv (overwritten). The gradients are with respect to the rotated q and k.
// One task is a (span, KV head) pair: it runs the query heads of the group
// in increasing order, and within a span the trunk's rows first, then each
// branch in order, so the gradients a key receives from several query
// heads and several branches are summed in a fixed order.
func attnBackward[T Float](p par, cfg Config, spans []span, q, k, v, probs, dout, dq, dk, dv []T) {
	nkv := cfg.kvHeads()
	rep := cfg.Heads / nkv
	p.forEach(len(spans)*nkv, 1, func(lo, hi int) {
		var ds []T
		for task := lo; task < hi; task++ {
			s, g := &spans[task/nkv], task%nkv
			rows := func(fn func(i int)) {
				for i := s.off; i < s.off+s.n; i++ {
					fn(i)
				}
				for _, b := range s.branches {
					for i := b.off; i < b.off+b.n; i++ {
						fn(i)
					}
				}
			}
			hv0 := newHeadView[T](cfg, g*rep)
			rows(func(i int) {
				clear(hv0.kcol(dk, i))
				clear(hv0.kcol(dv, i))
				for h := g * rep; h < (g+1)*rep; h++ {
					clear(newHeadView[T](cfg, h).qcol(dq, i))
				}
			})
			for h := g * rep; h < (g+1)*rep; h++ {
				hv := newHeadView[T](cfg, h)
				pm := probs[s.poff+h*s.size : s.poff+(h+1)*s.size]
				ds = hv.backwardBlock(s.off, s.n, s.off, s.n, 0, 0, pm, q, k, v, dout, dq, dk, dv, ds)
				for _, b := range s.branches {
					ds = hv.backwardBlock(b.off, b.n, s.off, s.n, b.off, b.n, pm[b.poff:], q, k, v, dout, dq, dk, dv, ds)
				}
			}
		}
	})
}

// backwardBlock adds the contribution of query rows r0…r0+n−1 (laid out
// as in forwardBlock) to their rows of dq and to dk, dv of their keys. ds
// is scratch, returned grown.
func (hv headView[T]) backwardBlock(r0, n, aOff, aN, bOff, bN int, pm, q, k, v, dout, dq, dk, dv, ds []T) []T {
	one := par{threads: 1}
	w, hd := aN+bN, hv.hd
	ds = grow(ds, n*w, false)
	dob, qb, dqb := dout[r0*hv.qd+hv.q0:], q[r0*hv.qd+hv.q0:], dq[r0*hv.qd+hv.q0:]
	ka, va, dka, dva := k[aOff*hv.kd+hv.k0:], v[aOff*hv.kd+hv.k0:], dk[aOff*hv.kd+hv.k0:], dv[aOff*hv.kd+hv.k0:]
	// dP = dout·vᵀ; dv += Pᵀ·dout.
	gemm(one, false, true, n, aN, hd, 1, dob, hv.qd, va, hv.kd, 0, ds, w)
	gemm(one, true, false, aN, hd, n, 1, pm, w, dob, hv.qd, 1, dva, hv.kd)
	var kb, vb, dkb, dvb []T
	if bN > 0 {
		kb, vb, dkb, dvb = k[bOff*hv.kd+hv.k0:], v[bOff*hv.kd+hv.k0:], dk[bOff*hv.kd+hv.k0:], dv[bOff*hv.kd+hv.k0:]
		gemm(one, false, true, n, bN, hd, 1, dob, hv.qd, vb, hv.kd, 0, ds[aN:], w)
		gemm(one, true, false, bN, hd, n, 1, pm[aN:], w, dob, hv.qd, 1, dvb, hv.kd)
	}
	// dS = P⊙(dP − Σⱼ P⊙dP)·scale, zero where P is.
	sc := T(hv.scale)
	for i := range n {
		prow, drow := pm[i*w:(i+1)*w], ds[i*w:(i+1)*w]
		var acc float64
		for j, pj := range prow {
			acc += float64(pj) * float64(drow[j])
		}
		a := T(acc)
		for j, pj := range prow {
			drow[j] = pj * (drow[j] - a) * sc
		}
	}
	// dq += dS·k; dk += dSᵀ·q.
	gemm(one, false, false, n, hd, aN, 1, ds, w, ka, hv.kd, 1, dqb, hv.qd)
	gemm(one, true, false, aN, hd, n, 1, ds, w, qb, hv.qd, 1, dka, hv.kd)
	if bN > 0 {
		gemm(one, false, false, n, hd, bN, 1, ds[aN:], w, kb, hv.kd, 1, dqb, hv.qd)
		gemm(one, true, false, bN, hd, n, 1, ds[aN:], w, qb, hv.qd, 1, dkb, hv.kd)
	}
	return ds
}
