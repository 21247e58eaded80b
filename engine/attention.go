package engine

import "math"

// span is one sequence of a packed batch: rows [off, off+n) of every
// activation matrix, and its attention probabilities at probs[poff:].
type span struct{ off, n, poff int }

// attnForward computes causal multi-head attention for every sequence of a
// packed batch: out = softmax(q·kᵀ/√hd + causal mask)·v per head, with q and
// k already rotated. probs receives each (sequence, head)'s n×n probability
// matrix (zero above the diagonal). (sequence, head) pairs run in parallel.
func attnForward[T Float](p par, cfg Config, spans []span, q, k, v, out, probs []T) {
	d, hd, nh := cfg.Dim, cfg.headDim(), cfg.Heads
	scale := 1 / math.Sqrt(float64(hd))
	p.forEach(len(spans)*nh, 1, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			s, h := spans[task/nh], task%nh
			pm := probs[s.poff+h*s.n*s.n : s.poff+(h+1)*s.n*s.n]
			for i := 0; i < s.n; i++ {
				qi := q[(s.off+i)*d+h*hd : (s.off+i)*d+(h+1)*hd]
				row := pm[i*s.n : (i+1)*s.n]
				mx := math.Inf(-1)
				for j := 0; j <= i; j++ {
					sc := float64(dot(qi, k[(s.off+j)*d+h*hd:(s.off+j)*d+(h+1)*hd])) * scale
					row[j] = T(sc)
					mx = math.Max(mx, sc)
				}
				var sum float64
				for j := 0; j <= i; j++ {
					e := math.Exp(float64(row[j]) - mx)
					row[j] = T(e)
					sum += e
				}
				inv := 1 / sum
				oi := out[(s.off+i)*d+h*hd : (s.off+i)*d+(h+1)*hd]
				clear(oi)
				for j := 0; j <= i; j++ {
					row[j] = T(float64(row[j]) * inv)
					axpy(row[j], v[(s.off+j)*d+h*hd:(s.off+j)*d+(h+1)*hd], oi)
				}
				clear(row[i+1:])
			}
		}
	})
}

// attnBackward takes dout and the forward's q, k, v, probs and writes dq, dk,
// dv (overwritten). The gradients are with respect to the rotated q and k.
func attnBackward[T Float](p par, cfg Config, spans []span, q, k, v, probs, dout, dq, dk, dv []T) {
	d, hd, nh := cfg.Dim, cfg.headDim(), cfg.Heads
	scale := T(1 / math.Sqrt(float64(hd)))
	p.forEach(len(spans)*nh, 1, func(lo, hi int) {
		ds := make([]T, 0, 64)
		for task := lo; task < hi; task++ {
			s, h := spans[task/nh], task%nh
			pm := probs[s.poff+h*s.n*s.n : s.poff+(h+1)*s.n*s.n]
			col := func(m []T, i int) []T { return m[(s.off+i)*d+h*hd : (s.off+i)*d+(h+1)*hd] }
			for i := 0; i < s.n; i++ {
				clear(col(dq, i))
				clear(col(dk, i))
				clear(col(dv, i))
			}
			ds = grow(ds, s.n, false)
			for i := 0; i < s.n; i++ {
				row := pm[i*s.n : (i+1)*s.n]
				doi := col(dout, i)
				// dP[i,j] = dout_i·v_j; dS = P⊙(dP − Σ P⊙dP)
				var acc float64
				for j := 0; j <= i; j++ {
					dp := dot(doi, col(v, j))
					ds[j] = dp
					acc += float64(row[j]) * float64(dp)
					axpy(row[j], doi, col(dv, j))
				}
				a := T(acc)
				dqi, qi := col(dq, i), col(q, i)
				for j := 0; j <= i; j++ {
					g := row[j] * (ds[j] - a) * scale
					if g == 0 {
						continue
					}
					axpy(g, col(k, j), dqi)
					axpy(g, qi, col(dk, j))
				}
			}
		}
	})
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
