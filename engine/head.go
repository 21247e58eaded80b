package engine

import (
	"math"

	"github.com/tandemrl/tandem/engine/kernels"
)

// The output layer over a large vocabulary. Logits are computed for a chunk
// of rows at a time (see logitRows), reduced to what the callers need (each
// row's log-sum-exp, the log-probabilities of the picked targets, sampled
// tokens) and dropped, so no pass holds an n×Vocab matrix: for Qwen's
// 151,936-token vocabulary that would be 608 KB per row. The backward pass
// recomputes each chunk's logits from the cached final-norm output (one
// more unembedding product, bit-identical to the forward's) and turns them
// into their gradient in place.

// logitBudget bounds the elements of one chunk of logits: 160 MiB in
// float32. Each chunk reads (and the kernels pack) the whole unembedding
// matrix once more, so for Qwen's vocabulary the chunk's rows, 276, are
// what amortises it: 64 rows spent a third of a training step there, and
// 220 (a 128 MiB budget), which cut a 255-row sequence into chunks of 220
// and 35 rows, ran Qwen3-0.6B's training step 0.5-7 % slower than one
// chunk does (four pairs of runs; the 35-row chunks ran at half the rate).
const logitBudget = 40 << 20

// logitRows returns the rows of one chunk of logits: as many as fit in
// logitBudget, at least 64 so the unembedding stays a matrix product that
// reuses each weight row (fewer rows would make it bandwidth-bound). For
// tandem's 98-token vocabulary a chunk holds 342,392 rows, so a whole
// batch is one chunk.
func logitRows(vocab int) int { return max(64, logitBudget/vocab) }

// chunk returns the rows of one chunk of a's n rows of logits: at most
// a.chunkRows when set (tests), else logitRows, in as few chunks as that
// allows, cut evenly (under a bound of 220, 255 rows go in chunks of 128
// and 127, not 220 and 35: each chunk packs the whole unembedding matrix,
// and a small one amortises it over few rows).
func (a *acts[T]) chunk(vocab, n int) int {
	most := logitRows(vocab)
	if a.chunkRows > 0 {
		most = a.chunkRows
	}
	parts := (max(n, 1) + most - 1) / most
	return (n + parts - 1) / parts
}

// headForward computes the logits of a's rows chunk by chunk from a.xnf,
// filling a.lse, a.pickLP and (with a.keepLast) a.last.
func (nt *net[T]) headForward(a *acts[T]) {
	c := nt.m.Config
	vocab, n := c.Vocab, a.n
	l := nt.lin(-1, kindUnembed)
	a.lse = a.lse[:0]
	a.top = a.top[:0]
	a.pickLP = append(a.pickLP[:0], make([]float64, len(a.picks))...)
	chunk := a.chunk(vocab, n)
	if l.lp != nil {
		a.luU = grow(a.luU, n*l.lp.Rank, false)
	}
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		logits := nt.chunkLogits(a, l, lo, hi)
		for i := lo; i < hi; i++ {
			a.lse = append(a.lse, logSumExp(logits[(i-lo)*vocab:(i-lo+1)*vocab]))
		}
		for k, pk := range a.picks {
			if pk.row >= lo && pk.row < hi {
				a.pickLP[k] = float64(logits[(pk.row-lo)*vocab+pk.target]) - a.lse[pk.row]
			}
		}
		if a.topK > 0 {
			for i := lo; i < hi; i++ {
				a.top = append(a.top, topTokens(logits[(i-lo)*vocab:(i-lo+1)*vocab], a.topK, a.lse[i]))
			}
		}
		if a.keepLast && hi == n {
			a.last = append(a.last[:0], logits[(n-1-lo)*vocab:(n-lo)*vocab]...)
		}
	}
}

// chunkLogits computes the logits of rows [lo, hi) into a.logits (and the
// adapter's x·Aᵀ of those rows into a.luU) and returns them.
func (nt *net[T]) chunkLogits(a *acts[T], l linear[T], lo, hi int) []T {
	c := nt.m.Config
	d, vocab := c.Dim, c.Vocab
	a.logits = grow(a.logits, (hi-lo)*vocab, false)
	var u []T
	if l.lp != nil {
		r := l.lp.Rank
		u = a.luU[lo*r : hi*r]
	}
	l.apply(nt.p, hi-lo, a.xnf[lo*d:hi*d], a.logits, &u)
	return a.logits
}

// headBackward adds the output layer's gradients for the loss terms and
// writes the gradient with respect to a.xnf into dxn (n×Dim). Rows without
// a live term get a zero gradient; chunks without any are not recomputed.
func (nt *net[T]) headBackward(a *acts[T], terms []term, csum []float64, live []bool, dxn []T) {
	c := nt.m.Config
	d, vocab, n := c.Dim, c.Vocab, a.n
	l := nt.lin(-1, kindUnembed)
	chunk := a.chunk(vocab, n)
	bw := &a.bw
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		hasLive := false
		for i := lo; i < hi && !hasLive; i++ {
			hasLive = live[i]
		}
		if !hasLive {
			clear(dxn[lo*d : hi*d])
			continue
		}
		logits := nt.chunkLogits(a, l, lo, hi)
		// dlogits = Σ coef·(onehot(target) − softmax) over a row's terms
		for i := lo; i < hi; i++ {
			row := logits[(i-lo)*vocab : (i-lo+1)*vocab]
			if !live[i] {
				clear(row)
				continue
			}
			expShift(row, a.lse[i], -csum[i])
		}
		for _, tm := range terms {
			if tm.coef != 0 && tm.row >= lo && tm.row < hi {
				logits[(tm.row-lo)*vocab+tm.target] += T(tm.coef)
			}
		}
		var u []T
		if l.lp != nil {
			u = a.luU[lo*l.lp.Rank : hi*l.lp.Rank]
		}
		l.backward(nt.p, hi-lo, logits, a.xnf[lo*d:hi*d], u, dxn[lo*d:hi*d], 0, &bw.tmp)
	}
}

func logSumExp[T Float](x []T) float64 {
	mx := maxScore(x)
	if x32, ok := any(x).([]float32); ok {
		return mx + math.Log(kernels.ExpShiftSum(x32, mx))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}
