package engine

import "math"

// Shared-prefix packing. In RL every group of samples shares one prompt: the
// examples of a group are prompt + completion, consecutive in a batch. The
// trainer finds runs of consecutive examples whose inputs share a prefix and
// lays each run out as one span (see [span]): the prefix once (the trunk),
// then each example's remaining tokens as a branch whose rotary positions
// continue from the prefix length and which attends to the trunk and to its
// own earlier tokens only. Every per-token quantity of an example is then
// what the unshared layout gives, up to float rounding: a trunk row's logits
// are shared, and each example keeps its own target, loss inputs and
// log-probability at that row.

// DefaultMinSharedPrefix is the shortest common prefix the trainer shares
// when TrainerOptions.MinSharedPrefix is zero.
const DefaultMinSharedPrefix = 8

// maxRunExamples bounds the examples of one run. Attention runs one task per
// (run, head), and a run's branches all add into the prefix's key and value
// gradients, so one huge run would leave threads idle; splitting a group of
// more than 32 costs one more copy of its prefix per 32 examples. It also
// bounds the planner's cost at len(inputs)·maxRunExamples steps.
const maxRunExamples = 32

// run is examples [lo, hi) of a batch laid out as one span: their first plen
// input tokens once, then each example's remaining tokens. rows is the
// number of packed rows it takes.
type run struct{ lo, hi, plen, rows int }

// exRow maps an example's input positions to packed rows: position j < plen
// is row trunk+j, a later one row branch+j−plen.
type exRow struct{ trunk, plen, branch int }

func (e exRow) row(j int) int {
	if j < e.plen {
		return e.trunk + j
	}
	return e.branch + j - e.plen
}

// size returns the query-key pairs per head of r's span over inputs (as
// spanSize counts them): the trunk's plen² and each example's suffix
// attending to the trunk and to itself.
func (r run) size(inputs [][]int) int {
	s := r.plen * r.plen
	for _, in := range inputs[r.lo:r.hi] {
		s += (len(in) - r.plen) * len(in)
	}
	return s
}

// singletonRuns gives every input its own run (the unshared layout).
func singletonRuns(inputs [][]int) []run {
	runs := make([]run, len(inputs))
	for i, in := range inputs {
		runs[i] = run{lo: i, hi: i + 1, plen: len(in), rows: len(in)}
	}
	return runs
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// batchLimit bounds one micro-batch, and so one run: at most rows packed
// rows, and, when elems > 0, at most elems cached activation values per
// layer, a batch of r rows whose spans hold s query-key pairs per head
// costing r·rowElems + heads·s (see [activationElems]).
type batchLimit struct{ rows, elems, rowElems, heads int }

// rowsOnly is the limit of at most rows rows.
func rowsOnly(rows int) batchLimit { return batchLimit{rows: rows} }

// fits reports whether rows packed rows with size query-key pairs per head
// are within l.
func (l batchLimit) fits(rows, size int) bool {
	return rows <= l.rows && (l.elems <= 0 || rows*l.rowElems+l.heads*size <= l.elems)
}

// planRuns splits inputs into runs of consecutive examples that minimize the
// total packed rows. A run of two or more examples (at most maxRunExamples)
// shares the longest prefix common to all its inputs, which must be at least
// minPrefix tokens, and fits lim; a single example is always a run of its
// own.
// Ties keep the fewer, earlier-ending runs found first, so the plan depends
// on the inputs only. Cost: O(len(inputs)·maxRunExamples) steps
// after one pass over the tokens.
func planRuns(inputs [][]int, minPrefix int, lim batchLimit) []run {
	n := len(inputs)
	if n < 2 || minPrefix < 1 {
		return singletonRuns(inputs)
	}
	lcp := make([]int, n-1) // lcp[k] between inputs k and k+1
	for k := range lcp {
		lcp[k] = commonPrefix(inputs[k], inputs[k+1])
	}
	best := make([]int, n+1) // best[j]: fewest rows for inputs[:j]
	from := make([]run, n+1) // the last run of that plan
	for j := 1; j <= n; j++ {
		last := len(inputs[j-1])
		best[j], from[j] = best[j-1]+last, run{lo: j - 1, hi: j, plen: last, rows: last}
		sum, sumSq, p := last, last*last, math.MaxInt
		for i := j - 2; i >= 0 && j-i <= maxRunExamples; i-- {
			p = min(p, lcp[i])
			if p < minPrefix {
				break
			}
			li := len(inputs[i])
			sum, sumSq = sum+li, sumSq+li*li
			rows := sum - (j-i-1)*p // the prefix once, every suffix
			// spanSize: the trunk's p² pairs, and each example's suffix
			// (len−p rows) attending to the trunk and itself (len keys).
			size := p*p + sumSq - p*sum
			if !lim.fits(rows, size) {
				break // rows and size only grow as the run extends backwards
			}
			if c := best[i] + rows; c < best[j] {
				best[j], from[j] = c, run{lo: i, hi: j, plen: p, rows: rows}
			}
		}
	}
	var runs []run
	for j := n; j > 0; j = from[j].lo {
		runs = append(runs, from[j])
	}
	for i, k := 0, len(runs)-1; i < k; i, k = i+1, k-1 {
		runs[i], runs[k] = runs[k], runs[i]
	}
	return runs
}

// pack lays out seqs one after the other, unshared.
func (a *acts[T]) pack(seqs [][]int, heads int) {
	a.packRuns(seqs, singletonRuns(seqs), heads)
}

// packRuns lays out runs, which must be consecutive, each as one span: the
// first plen tokens of inputs[r.lo] (the trunk), then for every example of
// the run its tokens after plen (a branch, positions continuing from plen;
// none when it has no more tokens). a.rows[i] maps example runs[0].lo+i.
func (a *acts[T]) packRuns(inputs [][]int, runs []run, heads int) {
	a.tokens, a.pos, a.spans, a.rows = a.tokens[:0], a.pos[:0], a.spans[:0], a.rows[:0]
	a.nprobs = 0
	off := 0
	for _, r := range runs {
		trunk := inputs[r.lo][:r.plen]
		sp := span{off: off, n: r.plen, poff: a.nprobs}
		a.tokens = append(a.tokens, trunk...)
		for i := range trunk {
			a.pos = append(a.pos, i)
		}
		off += r.plen
		for e := r.lo; e < r.hi; e++ {
			suffix := inputs[e][r.plen:]
			a.rows = append(a.rows, exRow{trunk: sp.off, plen: r.plen, branch: off})
			if len(suffix) == 0 {
				continue
			}
			sp.branches = append(sp.branches, branch{off: off, n: len(suffix)})
			a.tokens = append(a.tokens, suffix...)
			for i := range suffix {
				a.pos = append(a.pos, r.plen+i)
			}
			off += len(suffix)
		}
		sp.size = spanSize(sp.n, sp.branches)
		a.spans = append(a.spans, sp)
		a.nprobs += sp.size * heads
	}
	a.n = off
}
