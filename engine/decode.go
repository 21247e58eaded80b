package engine

import "math"

// decodeStep runs one token per active sample through the model at position
// tp+slot, using and extending the KV cache, and leaves the final-norm
// output in d.xn (one row per active sample, in the order of active) for
// [decoder.head]. Its arithmetic mirrors the full forward pass operation by
// operation (biases, q/k norms, the unmerged adapter), so a cached step and
// a full recompute give the same numbers up to the matrix products'
// shape-dependent summation order.
func (d *decoder[T]) decodeStep(active, lastTok []int, slot int) {
	cfg, nt := d.cfg, d.nt
	dim, hid, m, eps := cfg.Dim, cfg.Hidden, len(active), cfg.normEps()
	qd, kvd, hd, nkv := cfg.QDim(), cfg.KVDim(), cfg.headDim(), cfg.kvHeads()
	d.x, d.xn, d.y = grow(d.x, m*dim, false), grow(d.xn, m*dim, false), grow(d.y, m*dim, false)
	d.q, d.k, d.v, d.ao = grow(d.q, m*qd, false), grow(d.k, m*kvd, false), grow(d.v, m*kvd, false), grow(d.ao, m*qd, false)
	d.g, d.u, d.h = grow(d.g, m*hid, false), grow(d.u, m*hid, false), grow(d.h, m*hid, false)
	rs := make([]T, m*max(1, cfg.Heads))
	emb := nt.m.embedding()
	for r, i := range active {
		emb.row(lastTok[i], d.x[r*dim:(r+1)*dim])
	}
	pos := d.tp + slot
	at := func(int) int { return pos }
	for l := range nt.m.Blocks {
		b := &nt.m.Blocks[l]
		rmsnorm(m, dim, d.x, b.AttnNorm, d.xn, rs, eps)
		if cfg.QKNorm {
			d.qn, d.kn = grow(d.qn, m*qd, false), grow(d.kn, m*kvd, false)
			nt.lin(l, kindQ).apply(nt.p, m, d.xn, d.qn, &d.lu)
			nt.lin(l, kindK).apply(nt.p, m, d.xn, d.kn, &d.lu)
			rmsnorm(m*cfg.Heads, hd, d.qn, b.QNorm, d.q, rs, eps)
			rmsnorm(m*nkv, hd, d.kn, b.KNorm, d.k, rs, eps)
		} else {
			nt.lin(l, kindQ).apply(nt.p, m, d.xn, d.q, &d.lu)
			nt.lin(l, kindK).apply(nt.p, m, d.xn, d.k, &d.lu)
		}
		nt.lin(l, kindV).apply(nt.p, m, d.xn, d.v, &d.lu)
		ropeRows(nt.rope, cfg.Heads, hd, m, d.q, at, false)
		ropeRows(nt.rope, nkv, hd, m, d.k, at, false)
		for r, i := range active {
			off := (i*d.maxNew + slot) * kvd
			copy(d.gk[l][off:off+kvd], d.k[r*kvd:(r+1)*kvd])
			copy(d.gv[l][off:off+kvd], d.v[r*kvd:(r+1)*kvd])
		}
		d.attend(l, active, slot)
		nt.lin(l, kindO).apply(nt.p, m, d.ao, d.y, &d.lu)
		for i := range d.x {
			d.x[i] += d.y[i]
		}
		rmsnorm(m, dim, d.x, b.MLPNorm, d.xn, rs, eps)
		nt.lin(l, kindGate).apply(nt.p, m, d.xn, d.g, &d.lu)
		nt.lin(l, kindUp).apply(nt.p, m, d.xn, d.u, &d.lu)
		swiglu(nt.p, d.g, d.u, d.h, nil)
		nt.lin(l, kindDown).apply(nt.p, m, d.h, d.y, &d.lu)
		for i := range d.x {
			d.x[i] += d.y[i]
		}
	}
	rmsnorm(m, dim, d.x, nt.m.FinalNorm, d.xn, rs, eps)
}

// head computes the next-token logits of the m rows of d.xn in chunks of
// [logitRows] rows and hands each row to fn in order (fn must not keep it).
func (d *decoder[T]) head(m int, fn func(r int, row []T)) {
	cfg, nt := d.cfg, d.nt
	dim, vocab := cfg.Dim, cfg.Vocab
	l := nt.lin(-1, kindUnembed)
	chunk := logitRows(vocab)
	for lo := 0; lo < m; lo += chunk {
		hi := min(lo+chunk, m)
		d.logits = grow(d.logits, (hi-lo)*vocab, false)
		l.apply(nt.p, hi-lo, d.xn[lo*dim:hi*dim], d.logits, &d.lu)
		for r := lo; r < hi; r++ {
			fn(r, d.logits[(r-lo)*vocab:(r-lo+1)*vocab])
		}
	}
}

// attend computes attention output rows for every active sample and query
// head over the prompt's cached keys and the sample's own generated keys up
// to slot, reading KV head h/(Heads/KVHeads) for query head h. (sample,
// head) pairs run in parallel.
func (d *decoder[T]) attend(l int, active []int, slot int) {
	cfg := d.cfg
	qd, kvd, hd, nh := cfg.QDim(), cfg.KVDim(), cfg.headDim(), cfg.Heads
	rep := nh / cfg.kvHeads()
	scale := 1 / math.Sqrt(float64(hd))
	total := d.tp + slot + 1
	d.nt.p.forEach(len(active)*nh, 4, func(lo, hi int) {
		row := make([]T, total)
		for task := lo; task < hi; task++ {
			r, h := task/nh, task%nh
			i := active[r]
			k0 := (h / rep) * hd
			qi := d.q[r*qd+h*hd : r*qd+(h+1)*hd]
			key := func(j int) []T {
				if j < d.tp {
					return d.pk[l][j*kvd+k0 : j*kvd+k0+hd]
				}
				off := (i*d.maxNew+j-d.tp)*kvd + k0
				return d.gk[l][off : off+hd]
			}
			val := func(j int) []T {
				if j < d.tp {
					return d.pv[l][j*kvd+k0 : j*kvd+k0+hd]
				}
				off := (i*d.maxNew+j-d.tp)*kvd + k0
				return d.gv[l][off : off+hd]
			}
			for j := 0; j < total; j++ {
				row[j] = T(float64(dot(qi, key(j))) * scale)
			}
			softmaxRow(row)
			oi := d.ao[r*qd+h*hd : r*qd+(h+1)*hd]
			clear(oi)
			for j := 0; j < total; j++ {
				axpy(row[j], val(j), oi)
			}
		}
	})
}
