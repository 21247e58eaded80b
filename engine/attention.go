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

// headView is one head's columns of the packed q, k, v matrices.
type headView[T Float] struct {
	d, c0, c1 int
	scale     float64
}

func (hv headView[T]) col(m []T, row int) []T { return m[row*hv.d+hv.c0 : row*hv.d+hv.c1] }

// keyRow maps column j of a probability row to its key row: the first aN
// columns are rows aOff…, the rest rows bOff….
func keyRow(j, aOff, aN, bOff int) int {
	if j < aN {
		return aOff + j
	}
	return bOff + j - aN
}

// attnForward computes multi-head attention for every span of a packed
// batch: out = softmax(q·kᵀ/√hd + mask)·v per head, with q and k already
// rotated and the mask of [span]. probs receives each (span, head)'s
// probabilities (zero where masked). (span, head) pairs run in parallel.
func attnForward[T Float](p par, cfg Config, spans []span, q, k, v, out, probs []T) {
	hd, nh := cfg.headDim(), cfg.Heads
	scale := 1 / math.Sqrt(float64(hd))
	p.forEach(len(spans)*nh, 1, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			s, h := &spans[task/nh], task%nh
			hv := headView[T]{d: cfg.Dim, c0: h * hd, c1: (h + 1) * hd, scale: scale}
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
	qi := hv.col(q, r)
	mx := math.Inf(-1)
	for j := 0; j < nk; j++ {
		sc := float64(dot(qi, hv.col(k, keyRow(j, aOff, aN, bOff)))) * hv.scale
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
	oi := hv.col(out, r)
	clear(oi)
	for j := 0; j < nk; j++ {
		row[j] = T(float64(row[j]) * inv)
		axpy(row[j], hv.col(v, keyRow(j, aOff, aN, bOff)), oi)
	}
	clear(row[nk:])
}

// attnBackward takes dout and the forward's q, k, v, probs and writes dq, dk,
// dv (overwritten). The gradients are with respect to the rotated q and k.
// Within a span, the trunk's rows are processed first, then each branch in
// order, so the gradients a trunk key receives from several branches are
// summed in a fixed order.
func attnBackward[T Float](p par, cfg Config, spans []span, q, k, v, probs, dout, dq, dk, dv []T) {
	hd, nh := cfg.headDim(), cfg.Heads
	scale := 1 / math.Sqrt(float64(hd))
	p.forEach(len(spans)*nh, 1, func(lo, hi int) {
		ds := make([]T, 0, 64)
		for task := lo; task < hi; task++ {
			s, h := &spans[task/nh], task%nh
			hv := headView[T]{d: cfg.Dim, c0: h * hd, c1: (h + 1) * hd, scale: scale}
			pm := probs[s.poff+h*s.size : s.poff+(h+1)*s.size]
			clearRows := func(off, n int) {
				for i := off; i < off+n; i++ {
					clear(hv.col(dq, i))
					clear(hv.col(dk, i))
					clear(hv.col(dv, i))
				}
			}
			clearRows(s.off, s.n)
			for _, b := range s.branches {
				clearRows(b.off, b.n)
			}
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
	})
}

// backwardRow adds query row r's contribution to dq (its own row) and to dk,
// dv of its keys (laid out as in forwardRow). ds is scratch, returned grown.
func (hv headView[T]) backwardRow(r, aOff, aN, bOff, bN int, row, q, k, v, dout, dq, dk, dv, ds []T) []T {
	nk := aN + bN
	ds = grow(ds, nk, false)
	doi := hv.col(dout, r)
	// dP[i,j] = dout_i·v_j; dS = P⊙(dP − Σ P⊙dP)
	var acc float64
	for j := 0; j < nk; j++ {
		kr := keyRow(j, aOff, aN, bOff)
		dp := dot(doi, hv.col(v, kr))
		ds[j] = dp
		acc += float64(row[j]) * float64(dp)
		axpy(row[j], doi, hv.col(dv, kr))
	}
	a := T(acc)
	sc := T(hv.scale)
	dqi, qi := hv.col(dq, r), hv.col(q, r)
	for j := 0; j < nk; j++ {
		g := row[j] * (ds[j] - a) * sc
		if g == 0 {
			continue
		}
		kr := keyRow(j, aOff, aN, bOff)
		axpy(g, hv.col(k, kr), dqi)
		axpy(g, qi, hv.col(dk, kr))
	}
	return ds
}

// ropeRows rotates every head of rows [0, n) of x (n×Dim); positions come
// from pos(i). With inverse it applies the transposed rotation.
func ropeRows[T Float](r rope[T], cfg Config, n int, x []T, pos func(i int) int, inverse bool) {
	d, hd := cfg.Dim, cfg.headDim()
	for i := 0; i < n; i++ {
		pi := pos(i)
		for h := 0; h < cfg.Heads; h++ {
			r.apply(x[i*d+h*hd:i*d+(h+1)*hd], pi, inverse)
		}
	}
}
