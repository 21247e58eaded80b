package engine

import "math"

// decodeStep runs one token per active sample through the model at position
// tp+slot, using and extending the KV cache, and leaves the next-token
// logits in d.logits (one row per active sample, in the order of active).
// Its arithmetic mirrors the full forward pass operation by operation, so a
// cached step and a full recompute give the same numbers.
func (d *decoder[T]) decodeStep(active, lastTok []int, slot int) {
	cfg := d.cfg
	dim, hid, m, eps := cfg.Dim, cfg.Hidden, len(active), cfg.normEps()
	d.x, d.xn, d.y = grow(d.x, m*dim, false), grow(d.xn, m*dim, false), grow(d.y, m*dim, false)
	d.q, d.k, d.v, d.ao = grow(d.q, m*dim, false), grow(d.k, m*dim, false), grow(d.v, m*dim, false), grow(d.ao, m*dim, false)
	d.g, d.u, d.h = grow(d.g, m*hid, false), grow(d.u, m*hid, false), grow(d.h, m*hid, false)
	rs := make([]T, m)
	for r, i := range active {
		t := lastTok[i]
		copy(d.x[r*dim:(r+1)*dim], d.m.Embed[t*dim:(t+1)*dim])
	}
	pos := d.tp + slot
	at := func(int) int { return pos }
	lin := func(w []T, out, in int) linear[T] { return linear[T]{w: w, out: out, in: in} }
	for l := range d.m.Blocks {
		b := &d.m.Blocks[l]
		rmsnorm(m, dim, d.x, b.AttnNorm, d.xn, rs, eps)
		lin(b.Q, dim, dim).apply(d.p, m, d.xn, d.q, nil)
		lin(b.K, dim, dim).apply(d.p, m, d.xn, d.k, nil)
		lin(b.V, dim, dim).apply(d.p, m, d.xn, d.v, nil)
		ropeRows(d.rope, cfg, m, d.q, at, false)
		ropeRows(d.rope, cfg, m, d.k, at, false)
		for r, i := range active {
			off := (i*d.maxNew + slot) * dim
			copy(d.gk[l][off:off+dim], d.k[r*dim:(r+1)*dim])
			copy(d.gv[l][off:off+dim], d.v[r*dim:(r+1)*dim])
		}
		d.attend(l, active, slot)
		lin(b.O, dim, dim).apply(d.p, m, d.ao, d.y, nil)
		for i := range d.x {
			d.x[i] += d.y[i]
		}
		rmsnorm(m, dim, d.x, b.MLPNorm, d.xn, rs, eps)
		lin(b.Gate, hid, dim).apply(d.p, m, d.xn, d.g, nil)
		lin(b.Up, hid, dim).apply(d.p, m, d.xn, d.u, nil)
		swiglu(d.p, d.g, d.u, d.h, nil)
		lin(b.Down, dim, hid).apply(d.p, m, d.h, d.y, nil)
		for i := range d.x {
			d.x[i] += d.y[i]
		}
	}
	rmsnorm(m, dim, d.x, d.m.FinalNorm, d.xn, rs, eps)
	d.logits = grow(d.logits, m*cfg.Vocab, false)
	lin(d.m.Unembed, cfg.Vocab, dim).apply(d.p, m, d.xn, d.logits, nil)
}

// attend computes attention output rows for every active sample and head
// over the prompt's cached keys and the sample's own generated keys up to
// slot. (sample, head) pairs run in parallel.
func (d *decoder[T]) attend(l int, active []int, slot int) {
	cfg := d.cfg
	dim, hd, nh := cfg.Dim, cfg.headDim(), cfg.Heads
	scale := 1 / math.Sqrt(float64(hd))
	total := d.tp + slot + 1
	d.p.forEach(len(active)*nh, 4, func(lo, hi int) {
		row := make([]T, total)
		for task := lo; task < hi; task++ {
			r, h := task/nh, task%nh
			i := active[r]
			qi := d.q[r*dim+h*hd : r*dim+(h+1)*hd]
			key := func(j int) []T {
				if j < d.tp {
					return d.pk[l][j*dim+h*hd : j*dim+(h+1)*hd]
				}
				off := (i*d.maxNew+j-d.tp)*dim + h*hd
				return d.gk[l][off : off+hd]
			}
			val := func(j int) []T {
				if j < d.tp {
					return d.pv[l][j*dim+h*hd : j*dim+(h+1)*hd]
				}
				off := (i*d.maxNew+j-d.tp)*dim + h*hd
				return d.gv[l][off : off+hd]
			}
			mx := math.Inf(-1)
			for j := 0; j < total; j++ {
				sc := float64(dot(qi, key(j))) * scale
				row[j] = T(sc)
				mx = math.Max(mx, sc)
			}
			var sum float64
			for j := 0; j < total; j++ {
				e := math.Exp(float64(row[j]) - mx)
				row[j] = T(e)
				sum += e
			}
			inv := 1 / sum
			oi := d.ao[r*dim+h*hd : r*dim+(h+1)*hd]
			clear(oi)
			for j := 0; j < total; j++ {
				row[j] = T(float64(row[j]) * inv)
				axpy(row[j], val(j), oi)
			}
		}
	})
}
