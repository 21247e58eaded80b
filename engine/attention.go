package engine

import "math"

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

// keyRow maps column j of a probability row to its key row: the first aN
// columns are rows aOff…, the rest rows bOff….
func keyRow(j, aOff, aN, bOff int) int {
	if j < aN {
		return aOff + j
	}
	return bOff + j - aN
}

// attnForward computes grouped-query attention for every span of a packed
// batch: out = softmax(q·kᵀ/√hd + mask)·v per query head h, whose keys and
// values are those of KV head h/(Heads/KVHeads) (Hugging Face's repeat_kv),
// with q and k already rotated and the mask of [span]. q and out are
// n×QDim, k and v n×KVDim. probs receives each (span, query head)'s
// probabilities (zero where masked). (span, head) pairs run in parallel.
func attnForward[T Float](p par, cfg Config, spans []span, q, k, v, out, probs []T) {
	nh := cfg.Heads
	p.forEach(len(spans)*nh, 1, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			s, h := &spans[task/nh], task%nh
			hv := newHeadView[T](cfg, h)
			pm := probs[s.poff+h*s.size : s.poff+(h+1)*s.size]
			for i := 0; i < s.n; i++ {
				hv.forwardRow(s.off+i, s.off, i+1, 0, 0, pm[i*s.n:(i+1)*s.n], q, k, v, out)
			}
			for _, b := range s.branches {
				w := s.n + b.n
				for i := 0; i < b.n; i++ {
					hv.forwardRow(b.off+i, s.off, s.n, b.off, i+1, pm[b.poff+i*w:b.poff+(i+1)*w], q, k, v, out)
				}
			}
		}
	})
}

// forwardRow attends query row r to key rows aOff…aOff+aN−1 then
// bOff…bOff+bN−1, in that order, writing the probabilities to
// row[:aN+bN] (the rest of row is cleared) and the output to out's row r.
func (hv headView[T]) forwardRow(r, aOff, aN, bOff, bN int, row, q, k, v, out []T) {
	nk := aN + bN
	qi := hv.qcol(q, r)
	mx := math.Inf(-1)
	for j := 0; j < nk; j++ {
		sc := float64(dot(qi, hv.kcol(k, keyRow(j, aOff, aN, bOff)))) * hv.scale
		row[j] = T(sc)
		mx = math.Max(mx, sc)
	}
	var sum float64
	for j := 0; j < nk; j++ {
		e := math.Exp(float64(row[j]) - mx)
		row[j] = T(e)
		sum += e
	}
	inv := 1 / sum
	oi := hv.qcol(out, r)
	clear(oi)
	for j := 0; j < nk; j++ {
		row[j] = T(float64(row[j]) * inv)
		axpy(row[j], hv.kcol(v, keyRow(j, aOff, aN, bOff)), oi)
	}
	clear(row[nk:])
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
		ds := make([]T, 0, 64)
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
				for i := 0; i < s.n; i++ {
					ds = hv.backwardRow(s.off+i, s.off, i+1, 0, 0, pm[i*s.n:(i+1)*s.n], q, k, v, dout, dq, dk, dv, ds)
				}
				for _, b := range s.branches {
					w := s.n + b.n
					for i := 0; i < b.n; i++ {
						ds = hv.backwardRow(b.off+i, s.off, s.n, b.off, i+1, pm[b.poff+i*w:b.poff+(i+1)*w], q, k, v, dout, dq, dk, dv, ds)
					}
				}
			}
		}
	})
}

// backwardRow adds query row r's contribution to dq (its own row) and to dk,
// dv of its keys (laid out as in forwardRow). ds is scratch, returned grown.
func (hv headView[T]) backwardRow(r, aOff, aN, bOff, bN int, row, q, k, v, dout, dq, dk, dv, ds []T) []T {
	nk := aN + bN
	ds = grow(ds, nk, false)
	doi := hv.qcol(dout, r)
	// dP[i,j] = dout_i·v_j; dS = P⊙(dP − Σ P⊙dP)
	var acc float64
	for j := 0; j < nk; j++ {
		kr := keyRow(j, aOff, aN, bOff)
		dp := dot(doi, hv.kcol(v, kr))
		ds[j] = dp
		acc += float64(row[j]) * float64(dp)
		axpy(row[j], doi, hv.kcol(dv, kr))
	}
	a := T(acc)
	sc := T(hv.scale)
	dqi, qi := hv.qcol(dq, r), hv.qcol(q, r)
	for j := 0; j < nk; j++ {
		g := row[j] * (ds[j] - a) * sc
		if g == 0 {
			continue
		}
		kr := keyRow(j, aOff, aN, bOff)
		axpy(g, hv.kcol(k, kr), dqi)
		axpy(g, qi, hv.kcol(dk, kr))
	}
	return ds
}
