package engine

import "slices"

// One step of the scheduler: lay out the rows (sharing cached prompt rows
// between calls first), run the batched forward, consume the logits.

// plan lays out the next step's rows: every running sequence's last token,
// then whole prompt chunks of the prefilling calls, oldest first, while
// they fit the token budget. Rows are ordered by adapter group.
func (s *sched[T]) plan() ([]stepRow[T], []rowGroup[T]) {
	rows := s.rows[:0]
	for _, q := range s.running {
		s.ensureSlot(q)
		rows = append(rows, stepRow[T]{c: q.c, s: q, pos: q.c.tp + q.fed, tok: q.lastTok, logits: true})
	}
	room := s.lim.stepTokens - len(rows)
	for ci, c := range s.calls {
		if !c.admitted || c.filled >= c.tp || c.isDone() {
			continue
		}
		if c.kv == nil && s.share(ci) {
			continue // an earlier call is caching rows this one will take
		}
		pos := c.filled
		for pos < c.tp {
			end := min(c.tp, (pos/s.lim.chunk+1)*s.lim.chunk)
			if end-pos > room {
				break
			}
			for j := pos; j < end; j++ {
				rows = append(rows, stepRow[T]{c: c, pos: j, tok: c.prompt[j], logits: j == c.tp-1 || c.p.PromptLogprobs})
			}
			room -= end - pos
			pos = end
		}
		if pos < c.tp {
			break
		}
	}
	s.rows = rows
	return rows, groupRows(rows)
}

// share gives call s.calls[ci], before it computes any row of its own,
// what another admitted call of the same
// version has cached for a common prefix: the whole cache of a call with
// the same prompt, shared, once complete; otherwise a copy of the longest
// run of rows past its own (and their prompt log-probs, when it asks for
// them). It reports whether the call should wait for an earlier call still
// caching at least DefaultMinSharedPrefix rows it could use. A row's key
// and value depend only on the tokens up to it and the adapter (rows are
// batch-invariant, see batch.go), so a shared row has the bits the call
// would compute.
func (s *sched[T]) share(ci int) bool {
	c := s.calls[ci]
	best, from, wait := c.filled, (*call[T])(nil), false
	for qi, q := range s.calls {
		if q == c || !q.admitted || q.kv == nil || q.w != c.w || q.isDone() || (c.p.PromptLogprobs && !q.p.PromptLogprobs) {
			continue
		}
		lcp := commonPrefix(c.prompt, q.prompt)
		if lcp == c.tp && q.tp == c.tp && q.filled == c.tp && q.kv.last != nil {
			s.alias(c, q)
			return false
		}
		// All but the last row (its logits are the call's own), and with
		// prompt log-probs only rows j whose next token j+1 < lcp is the
		// same for both.
		l := min(lcp, c.tp-1)
		if c.p.PromptLogprobs {
			l = min(l, lcp-1)
		}
		if l <= c.filled {
			continue
		}
		if have := min(l, q.filled); have > best {
			best, from = have, q
		}
		wait = wait || (qi < ci && q.filled < lcp && lcp-c.filled >= DefaultMinSharedPrefix)
	}
	if wait {
		return true
	}
	s.ownKV(c)
	if from != nil {
		kvd, lo := c.kvd, c.filled
		for l := range c.kv.k {
			copy(c.kv.k[l][lo*kvd:best*kvd], from.kv.k[l][lo*kvd:best*kvd])
			copy(c.kv.v[l][lo*kvd:best*kvd], from.kv.v[l][lo*kvd:best*kvd])
		}
		if c.p.PromptLogprobs {
			copy(c.promptLP[lo+1:best+1], from.promptLP[lo+1:best+1])
		}
		s.totals.SharedRows += uint64(best - lo)
		c.filled = best
	}
	return false
}

// alias makes c share q's complete cache of the same prompt.
func (s *sched[T]) alias(c, q *call[T]) {
	c.kv = q.kv
	c.kv.refs++
	if c.p.PromptLogprobs {
		copy(c.promptLP, q.promptLP)
	}
	s.totals.SharedRows += uint64(c.tp - c.filled)
	c.filled = c.tp
}

// groupRows orders rows by adapter, in order of first appearance, and
// returns the groups.
func groupRows[T Float](rows []stepRow[T]) []rowGroup[T] {
	var order []*Served[T]
	for _, rw := range rows {
		if !slices.Contains(order, rw.c.w) {
			order = append(order, rw.c.w)
		}
	}
	if len(order) > 1 {
		slices.SortStableFunc(rows, func(a, b stepRow[T]) int {
			return slices.Index(order, a.c.w) - slices.Index(order, b.c.w)
		})
	}
	groups := make([]rowGroup[T], 0, len(order))
	lo := 0
	for i := 1; i <= len(rows); i++ {
		if i == len(rows) || rows[i].c.w != rows[lo].c.w {
			groups = append(groups, rowGroup[T]{lo: lo, hi: i, ad: rows[lo].c.w.ad})
			lo = i
		}
	}
	return groups
}

// step runs one batched forward over the planned rows and consumes their
// logits: decode rows draw their next token, prompt rows record prompt
// log-probs (and the last one its logits for the first tokens). It
// reports whether there was anything to run.
func (s *sched[T]) step() bool {
	rows, groups := s.plan()
	if len(rows) == 0 {
		return false
	}
	if s.hook != nil {
		s.hook(s.totals.Steps, len(rows), len(groups))
	}
	s.totals.Steps++
	var ended []*seqState[T]
	s.b.forward(rows, groups, func(r int, logits []T) {
		rw := &rows[r]
		c := rw.c
		if q := rw.s; q != nil {
			q.fed++
			if !s.pick(q, logits) {
				ended = append(ended, q)
			}
			return
		}
		if rw.pos == c.tp-1 {
			s.keepLast(c, logits)
		}
		if c.p.PromptLogprobs && rw.pos+1 < c.tp {
			c.promptLP[rw.pos+1] = float64(logits[c.prompt[rw.pos+1]]) - logSumExp(logits)
		}
	})
	for _, rw := range rows {
		if rw.s == nil {
			s.totals.PrefillRows++
			rw.c.filled = max(rw.c.filled, rw.pos+1)
		} else {
			s.totals.DecodeRows++
		}
	}
	for _, q := range ended {
		s.release(q)
	}
	s.compact()
	return true
}
