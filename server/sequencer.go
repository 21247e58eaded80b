package server

import "fmt"

// sequencer orders the training calls of one model by seq_id. It is a plain
// single-threaded type; the model's mutex guards it.
//
// The SDK numbers a training client's calls 1, 2, 3, … (seq_id = request id
// + 1) and sends them one after another, but retries and parallel
// connections can reorder or repeat them. The sequencer releases calls in
// seq_id order: a call equal to the next expected seq_id is released with
// every parked call that follows it; a call ahead of it is parked; a call
// whose seq_id was seen before is a duplicate and gets the first call's
// request id. Calls without a seq_id are released at once.
type sequencer[T any] struct {
	next    int64            // the next seq_id to release
	started bool             // whether any seq_id was released
	parked  map[int64]T      // calls ahead of next
	seen    map[int64]string // seq_id → request id, for duplicates
	order   []int64          // seen keys, oldest first, to bound seen
}

// maxSeen bounds how many past seq_ids a sequencer remembers for duplicates.
const maxSeen = 4096

// seqResult says what to do with a submitted call.
type seqResult[T any] struct {
	dupOf   string // non-empty: a duplicate of this request id
	stale   bool   // a duplicate too old to remember
	parked  bool   // waiting for an earlier seq_id
	release []T    // calls to apply now, in order
}

func newSequencer[T any]() *sequencer[T] {
	return &sequencer[T]{next: 1, parked: map[int64]T{}, seen: map[int64]string{}}
}

// submit offers call c with seq_id seq (nil: unsequenced) and request id id.
func (s *sequencer[T]) submit(seq *int64, id string, c T) seqResult[T] {
	if seq == nil {
		return seqResult[T]{release: []T{c}}
	}
	n := *seq
	if prev, ok := s.seen[n]; ok {
		return seqResult[T]{dupOf: prev}
	}
	// The SDK starts at 1; a client starting at 0 is accepted too.
	if !s.started && n == 0 && s.next == 1 {
		s.next = 0
	}
	if n < s.next {
		return seqResult[T]{stale: true}
	}
	s.remember(n, id)
	if n > s.next {
		s.parked[n] = c
		return seqResult[T]{parked: true}
	}
	out := []T{c}
	s.started = true
	s.next++
	for {
		p, ok := s.parked[s.next]
		if !ok {
			break
		}
		delete(s.parked, s.next)
		out = append(out, p)
		s.next++
	}
	return seqResult[T]{release: out}
}

// drop removes a parked call (its wait timed out) and reports whether it was
// still parked. Its seq_id stays "seen" so a retry gets the failed result.
func (s *sequencer[T]) drop(seq int64) bool {
	if _, ok := s.parked[seq]; !ok {
		return false
	}
	delete(s.parked, seq)
	return true
}

func (s *sequencer[T]) remember(n int64, id string) {
	s.seen[n] = id
	s.order = append(s.order, n)
	if len(s.order) > maxSeen {
		delete(s.seen, s.order[0])
		s.order = s.order[1:]
	}
}

// waitingFor describes the gap a parked call waits on, for error messages.
func (s *sequencer[T]) waitingFor(seq int64) string {
	return fmt.Sprintf("seq_id %d waited for seq_id %d, which never came", seq, s.next)
}
