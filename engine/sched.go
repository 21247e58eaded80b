package engine

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// The scheduler's core: plain single-threaded state, driven one step at a
// time by the goroutine in schedloop.go. Between steps it drops abandoned
// calls and admits work in arrival order; a step is one batched forward
// over every running sequence's next token plus whole prompt chunks of the
// calls still prefilling, within the step's token budget.
//
// Resources. A call is admitted (its prefill may start) when a seat for
// its first sample and memory for its prompt's keys and values, its last
// prompt row's logits and that sample's worst case (MaxTokens−1 cached
// tokens, bounded by the context) fit; each further sample of the call
// needs a seat and its own worst case. A finished sample gives its seat
// and memory back at once, a finished call its prompt's. Admission is
// strictly first come, first served: the oldest call or sample that does
// not fit holds back every later one (no call starves), except that calls
// holding a reserved first sample always start it. When nothing can run
// otherwise, the oldest waiting item is admitted over the memory budget,
// so a call larger than the budget runs, alone.
//
// Shared prompts. A call whose prompt shares a prefix with another
// admitted call of the same version takes the rows that call has cached
// instead of computing them (see share in schedstep.go); calls with the
// same prompt share one cache.

// call is one Sample call inside the scheduler. The submitting goroutine
// writes it before handing it over and reads seqs, promptLP and err after
// done is closed; stop is the only field both read meanwhile.
type call[T Float] struct {
	w      *Served[T]
	prompt []int
	n      int
	p      SamplingParams

	stop     <-chan struct{} // the caller's ctx.Done(): the call is dropped
	done     chan struct{}   // closed when seqs, promptLP and err are final
	seqs     []Sequence
	promptLP []float64
	err      error

	tp, maxNew, kvd int
	tokenText       func(int) string
	ch              chooser
	maxStop         int
	admitted        bool
	firstSeat       bool         // the first sample's seat and memory are reserved
	filled          int          // prompt positions cached
	kv              *promptKV[T] // the prompt's cache, once the call computes or shares it
	started         int          // samples started
	finished        int          // of them, ended
	reserved        int64        // bytes of KV memory reserved for the call
	seats           int
}

// promptKV is a prompt's cached keys and values and its last row's logits
// (the first tokens' distribution). Once complete it is read-only and
// shared by every call of the same prompt and version (refs of them).
type promptKV[T Float] struct {
	k, v  [][]T // per layer, tp×KVDim
	last  []T
	refs  int
	bytes int64
}

// seqState is one sample decoding.
type seqState[T Float] struct {
	c       *call[T]
	i       int
	rng     *rand.Rand
	text    strings.Builder
	lastTok int
	fed     int   // generated tokens whose keys are cached
	gk, gv  [][]T // per layer, fed×KVDim used
	ended   bool
}

// schedLimits are the resolved SamplerOptions of the scheduler.
type schedLimits struct {
	maxBatch, stepTokens, chunk int
	budget                      int64
}

// sched is the scheduler's state; it is owned by one goroutine.
type sched[T Float] struct {
	cfg     Config
	lim     schedLimits
	perPos  int64 // bytes of one cached position
	b       *batch[T]
	calls   []*call[T] // admitted or waiting, in arrival order
	running []*seqState[T]

	seats     int
	reserved  int64
	allocated int64
	totals    SamplerStats // cumulative counters
	rows      []stepRow[T]
	hook      func(step uint64, rows, groups int) // tests: called before each step
}

func newSched[T Float](m *Model[T], lim schedLimits, p par, r rope[T]) *sched[T] {
	cfg := m.Config
	perPos := 2 * int64(cfg.Layers) * int64(cfg.KVDim()) * int64(sizeOf[T]())
	return &sched[T]{cfg: cfg, lim: lim, perPos: perPos, b: newBatch(m, p, r)}
}

// prepare fills the derived fields of a call about to be submitted.
func (c *call[T]) prepare(cfg Config, tokenText func(int) string) {
	c.tp = len(c.prompt)
	c.maxNew = min(c.p.MaxTokens, cfg.Context-c.tp)
	c.kvd = cfg.KVDim()
	c.tokenText = tokenText
	c.ch = chooser{p: c.p}
	for _, st := range c.p.StopStrings {
		c.maxStop = max(c.maxStop, len(st))
	}
	c.seqs = make([]Sequence, c.n)
	if c.p.PromptLogprobs {
		c.promptLP = make([]float64, c.tp)
	}
	c.done = make(chan struct{})
}

// idle reports whether the scheduler holds no call.
func (s *sched[T]) idle() bool { return len(s.calls) == 0 }

// seqBytes is the worst-case KV memory of one sample of c.
func (s *sched[T]) seqBytes(c *call[T]) int64 { return int64(c.maxNew-1) * s.perPos }

// sweep finishes the calls whose callers stopped waiting, freeing their
// sequences and memory; the others are not touched.
func (s *sched[T]) sweep() {
	for _, c := range s.calls {
		select {
		case <-c.stop:
			s.finish(c, errAbandoned)
		default:
		}
	}
	s.compact()
}

// compact drops finished calls and sequences from the lists.
func (s *sched[T]) compact() {
	s.calls = slices.DeleteFunc(s.calls, func(c *call[T]) bool { return c.isDone() })
	s.running = slices.DeleteFunc(s.running, func(q *seqState[T]) bool { return q.ended || q.c.isDone() })
}

func (c *call[T]) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// finish releases everything c holds and hands its result (or err) back.
func (s *sched[T]) finish(c *call[T], err error) {
	s.seats -= c.seats
	s.reserved -= c.reserved
	for _, q := range s.running {
		if q.c == c {
			s.allocated -= q.bytes()
		}
	}
	if kv := c.kv; kv != nil {
		if kv.refs--; kv.refs == 0 {
			s.allocated -= kv.bytes
		}
	}
	c.seats, c.reserved, c.kv = 0, 0, nil
	c.err = err
	if err != nil {
		c.seqs, c.promptLP = nil, nil
		s.totals.Abandoned++
	} else {
		s.totals.Completed++
	}
	close(c.done)
}

// failAll finishes every call with err.
func (s *sched[T]) failAll(err error) {
	for _, c := range s.calls {
		if !c.isDone() {
			s.finish(c, err)
		}
	}
	s.calls, s.running = nil, nil
}

// fits reports whether a seat and need more bytes are free; force ignores
// the memory budget.
func (s *sched[T]) fits(need int64, force bool) bool {
	if s.seats >= s.lim.maxBatch {
		return false
	}
	return force || s.reserved == 0 || s.reserved+need <= s.lim.budget
}

func (s *sched[T]) reserve(c *call[T], need int64) {
	s.seats++
	c.seats++
	s.reserved += need
	c.reserved += need
}

// admit admits waiting calls and starts samples, oldest first, while seats
// and memory allow (see the top of this file). With force the first item
// that does not fit the memory budget is admitted anyway.
func (s *sched[T]) admit(force bool) {
	blocked := false
	for _, c := range s.calls {
		if c.isDone() {
			continue
		}
		if !c.admitted {
			if blocked {
				continue
			}
			need := int64(c.tp)*s.perPos + int64(s.cfg.Vocab*sizeOf[T]()) + s.seqBytes(c)
			if !s.fits(need, force) {
				blocked = true
				continue
			}
			force = false
			s.reserve(c, need)
			c.admitted, c.firstSeat = true, true
			continue
		}
		if c.filled < c.tp {
			continue
		}
		for c.started < c.n {
			if c.firstSeat {
				c.firstSeat = false
			} else {
				if blocked {
					break
				}
				need := s.seqBytes(c)
				if !s.fits(need, force) {
					blocked = true
					break
				}
				force = false
				s.reserve(c, need)
			}
			s.start(c)
		}
	}
	s.compact()
}

// start starts c's next sample: its first token comes from the prompt's
// last logits; a sample that stops there gives its seat back at once.
func (s *sched[T]) start(c *call[T]) {
	i := c.started
	c.started++
	q := &seqState[T]{c: c, i: i, rng: rand.New(rand.NewPCG(uint64(c.p.Seed), uint64(i)))}
	c.seqs[i].Tokens = make([]int, 0, min(c.maxNew, 64))
	c.seqs[i].Logprobs = make([]float64, 0, min(c.maxNew, 64))
	if s.pick(q, c.kv.last) {
		q.gk, q.gv = make([][]T, s.cfg.Layers), make([][]T, s.cfg.Layers)
		s.running = append(s.running, q)
		return
	}
	s.release(q)
}

// pick draws q's next token from logits and reports whether q goes on.
func (s *sched[T]) pick(q *seqState[T], logits []T) bool {
	c := q.c
	tok, lp := choose(&c.ch, logits, q.rng)
	sq := &c.seqs[q.i]
	sq.Tokens = append(sq.Tokens, tok)
	sq.Logprobs = append(sq.Logprobs, lp)
	q.lastTok = tok
	s.totals.Tokens++
	if slices.Contains(c.p.StopTokens, tok) {
		sq.StopReason = StopStop
		return false
	}
	if c.maxStop > 0 && stopStringEnds(&q.text, c.tokenText(tok), c.maxStop, c.p.StopStrings) {
		sq.StopReason = StopStop
		return false
	}
	if len(sq.Tokens) >= c.maxNew {
		sq.StopReason = StopLength
		return false
	}
	return true
}

// release gives back a finished sample's seat, memory and cache, and
// finishes its call when it was the last.
func (s *sched[T]) release(q *seqState[T]) {
	c := q.c
	need := s.seqBytes(c)
	s.seats--
	c.seats--
	s.reserved -= need
	c.reserved -= need
	s.allocated -= q.bytes()
	q.gk, q.gv, q.ended = nil, nil, true
	c.finished++
	if c.finished == c.n {
		s.finish(c, nil)
	}
}

// bytes is the KV memory q's cache holds.
func (q *seqState[T]) bytes() int64 {
	var n int64
	for l := range q.gk {
		n += int64(cap(q.gk[l]) + cap(q.gv[l]))
	}
	return n * int64(sizeOf[T]())
}

func sizeOf[T Float]() int {
	var z T
	if _, ok := any(z).(float64); ok {
		return 8
	}
	return 4
}

// ensureSlot makes room in q's cache for the key and value of position
// tp+fed, growing it (doubling, up to the worst case) when full.
func (s *sched[T]) ensureSlot(q *seqState[T]) {
	c := q.c
	need := (q.fed + 1) * c.kvd
	if len(q.gk) > 0 && cap(q.gk[0]) >= need {
		for l := range q.gk {
			q.gk[l], q.gv[l] = q.gk[l][:need], q.gv[l][:need]
		}
		return
	}
	before := q.bytes()
	size := min(max(need, 2*cap(q.gk[0]), 8*c.kvd), (c.maxNew-1)*c.kvd)
	for l := range q.gk {
		k, v := make([]T, need, size), make([]T, need, size)
		copy(k, q.gk[l])
		copy(v, q.gv[l])
		q.gk[l], q.gv[l] = k, v
	}
	s.allocated += q.bytes() - before
}

// keepLast keeps a copy of c's last prompt row's logits with its cache.
func (s *sched[T]) keepLast(c *call[T], logits []T) {
	c.kv.last = clone(logits)
	n := int64(len(logits) * sizeOf[T]())
	c.kv.bytes += n
	s.allocated += n
}

// ownKV gives c a cache of its own for its prompt, when it has none.
func (s *sched[T]) ownKV(c *call[T]) {
	if c.kv != nil {
		return
	}
	kv := &promptKV[T]{k: make([][]T, s.cfg.Layers), v: make([][]T, s.cfg.Layers), refs: 1, bytes: int64(c.tp) * s.perPos}
	for l := range kv.k {
		kv.k[l], kv.v[l] = zeros[T](c.tp*c.kvd), zeros[T](c.tp*c.kvd)
	}
	s.allocated += kv.bytes
	c.kv = kv
}

// snapshot returns the scheduler's figures.
func (s *sched[T]) snapshot() SamplerStats {
	st := s.totals
	st.KVBudgetBytes, st.KVReservedBytes, st.KVAllocatedBytes = s.lim.budget, s.reserved, s.allocated
	st.Running = len(s.running)
	var versions []*Served[T]
	for _, c := range s.calls {
		switch {
		case !c.admitted:
			st.Waiting++
		case c.filled < c.tp:
			st.Prefilling++
		}
		if c.admitted && !slices.Contains(versions, c.w) {
			versions = append(versions, c.w)
		}
	}
	st.Versions = len(versions)
	return st
}
