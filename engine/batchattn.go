package engine

import "math"

// Attention of a batched step. A prompt row attends to its call's prompt
// keys up to its own position, one (row, head) pair at a time (attendRow).
// Decode rows attend to all of their prompt's keys, then to their
// sequence's own: the decode rows of one step that read the same prompt
// cache (a call's samples, calls sharing a prompt) are taken in blocks of
// at most batchRows rows per query head, whose scores against the prompt's
// keys are one product q·Kᵀ and whose weighted sum of the prompt's values
// one product P·V; each row then adds its own keys' part. A block's
// products run on the kernels' routes whose rows do not depend on each
// other (q·Kᵀ has at most 16 rows; P·V's route depends on the head width
// only, see TestProductRowsBatchInvariantAB), and the rest is per row, so a
// row's output does not depend on which rows share its block.

// attnTask is one unit of a step's attention: query head h of prompt row r
// (blk nil), or of the decode rows blk.
type attnTask struct {
	r, h int
	blk  []int
}

// attnScratch is one goroutine's buffers.
type attnScratch[T Float] struct {
	q, s, o, own, row []T
}

// attend computes the attention output of every row and query head into
// b.ao. Query head h reads KV head h/(Heads/KVHeads). Tasks run in
// parallel.
func (b *batch[T]) attend(l int, rows []stepRow[T]) {
	nh := b.cfg.Heads
	var tasks []attnTask
	var order []*promptKV[T]
	byKV := map[*promptKV[T]][]int{}
	for r, rw := range rows {
		if rw.s == nil {
			for h := range nh {
				tasks = append(tasks, attnTask{r: r, h: h})
			}
			continue
		}
		if _, ok := byKV[rw.c.kv]; !ok {
			order = append(order, rw.c.kv)
		}
		byKV[rw.c.kv] = append(byKV[rw.c.kv], r)
	}
	for _, kv := range order {
		rs := byKV[kv]
		for lo := 0; lo < len(rs); lo += batchRows {
			blk := rs[lo:min(lo+batchRows, len(rs))]
			for h := range nh {
				tasks = append(tasks, attnTask{h: h, blk: blk})
			}
		}
	}
	// Tasks are handed out to goroutines only when the step's attention is
	// worth it (waking a goroutine costs microseconds).
	work, hd := 0, b.cfg.headDim()
	for _, rw := range rows {
		work += nh * (rw.pos + 1) * hd
	}
	minChunk := 1
	if work < 4*minBlockWork {
		minChunk = len(tasks)
	}
	b.p.forEach(len(tasks), minChunk, func(lo, hi int) {
		var sc attnScratch[T]
		for _, t := range tasks[lo:hi] {
			if t.blk == nil {
				b.attendPrompt(l, &rows[t.r], t.r, t.h, &sc)
			} else {
				b.attendBlock(l, rows, t.blk, t.h, &sc)
			}
		}
	})
}

// attendPrompt computes head h of prompt row r.
func (b *batch[T]) attendPrompt(l int, rw *stepRow[T], r, h int, sc *attnScratch[T]) {
	cfg := b.cfg
	qd, kvd, hd := cfg.QDim(), cfg.KVDim(), cfg.headDim()
	scale := 1 / math.Sqrt(float64(hd))
	kr := keyRange[T]{k: rw.c.kv.k[l], v: rw.c.kv.v[l], n: rw.pos + 1, kvd: kvd, k0: (h / (cfg.Heads / cfg.kvHeads())) * hd, hd: hd}
	sc.row = attendRow(b.q[r*qd+h*hd:r*qd+(h+1)*hd], scale, kr, keyRange[T]{}, b.ao[r*qd+h*hd:r*qd+(h+1)*hd], sc.row)
}

// attendBlock computes head h of the decode rows blk, which share one
// prompt cache: softmax over the prompt's keys then the row's own, the
// prompt's part as two products over the block.
func (b *batch[T]) attendBlock(l int, rows []stepRow[T], blk []int, h int, sc *attnScratch[T]) {
	cfg := b.cfg
	qd, kvd, hd := cfg.QDim(), cfg.KVDim(), cfg.headDim()
	scale := 1 / math.Sqrt(float64(hd))
	c0 := rows[blk[0]].c
	tp, kv, m := c0.tp, c0.kv, len(blk)
	k0 := (h / (cfg.Heads / cfg.kvHeads())) * hd
	sc.q, sc.s, sc.o = grow(sc.q, m*hd, false), grow(sc.s, m*tp, false), grow(sc.o, m*hd, false)
	for i, r := range blk {
		copy(sc.q[i*hd:(i+1)*hd], b.q[r*qd+h*hd:r*qd+(h+1)*hd])
	}
	gemm(par{}, false, true, m, tp, hd, 1, sc.q, hd, kv.k[l][k0:], kvd, 0, sc.s, tp)
	// Own keys' probabilities of every row, one after the other.
	nown := 0
	for _, r := range blk {
		nown += rows[r].pos - tp + 1
	}
	sc.own = grow(sc.own, nown, false)
	off := 0
	for i, r := range blk {
		rw := &rows[r]
		own := keyRange[T]{k: rw.s.gk[l], v: rw.s.gv[l], n: rw.pos - tp + 1, kvd: kvd, k0: k0, hd: hd}
		softmaxParts(sc.s[i*tp:(i+1)*tp], sc.own[off:off+own.n], sc.q[i*hd:(i+1)*hd], own, scale)
		off += own.n
	}
	gemm(par{}, false, false, m, hd, tp, 1, sc.s, tp, kv.v[l][k0:], kvd, 0, sc.o, hd)
	off = 0
	for i, r := range blk {
		rw := &rows[r]
		own := keyRange[T]{k: rw.s.gk[l], v: rw.s.gv[l], n: rw.pos - tp + 1, kvd: kvd, k0: k0, hd: hd}
		out := b.ao[r*qd+h*hd : r*qd+(h+1)*hd]
		copy(out, sc.o[i*hd:(i+1)*hd])
		for j := 0; j < own.n; j++ {
			axpy(sc.own[off+j], own.val(j), out)
		}
		off += own.n
	}
}

// softmaxParts turns one row's raw prompt scores (q·k, in place) and its
// own keys' scores (computed here into own) into probabilities: scaled,
// then softmaxSplit over both parts.
func softmaxParts[T Float](prompt, own, q []T, keys keyRange[T], scale float64) {
	for j, x := range prompt {
		prompt[j] = T(float64(x) * scale)
	}
	for j := range own {
		own[j] = T(float64(dot(q, keys.key(j))) * scale)
	}
	softmaxSplit(prompt, own)
}
