// Package ledger accounts for every prompt a run hands out: for each
// prompt (a rollout.Problem's Key), how many times it was taken from the
// dataset and what became of each of those groups — trained (at which step,
// version and staleness), dropped or requeued as over-stale, failed (by
// error kind), cut short by shutdown (abandoned), left over in the buffer
// when the run ended, or taken by a step the trainer never confirmed.
//
// Every hand-out ends in exactly one outcome, so at the end of a run each
// Entry satisfies HandedOut = Trained + Dropped + Requeued + Failed +
// Abandoned + LeftOver + Unconfirmed (a requeued prompt goes back to the
// dataset and its next hand-out is counted again); Check verifies it. A
// Ledger is safe for concurrent use; its methods take one short lock and
// never block otherwise.
package ledger

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tandemrl/tandem/policy"
)

// Training is one training of a group of a prompt.
type Training struct {
	Step      int            `json:"step"`
	Version   policy.Version `json:"version"`
	Staleness int64          `json:"staleness"`
}

// Entry is what became of one prompt's hand-outs.
type Entry struct {
	Prompt      string `json:"prompt,omitempty"`
	HandedOut   int    `json:"handed_out"`
	Trained     int    `json:"trained"`
	Dropped     int    `json:"dropped,omitempty"`
	Requeued    int    `json:"requeued,omitempty"`
	Failed      int    `json:"failed,omitempty"`
	Abandoned   int    `json:"abandoned,omitempty"`
	LeftOver    int    `json:"left_over,omitempty"`
	Unconfirmed int    `json:"unconfirmed,omitempty"`
	// TrainedAt lists the trainings, in order.
	TrainedAt []Training `json:"trained_at,omitempty"`
	// Failures counts the failed rollouts by error kind (see Kind).
	Failures map[string]int `json:"failures,omitempty"`
}

// Outcomes returns the number of hand-outs that have an outcome.
func (e Entry) Outcomes() int {
	return e.Trained + e.Dropped + e.Requeued + e.Failed + e.Abandoned + e.LeftOver + e.Unconfirmed
}

// Ledger collects the entries of one run. The zero value is empty and
// ready. Entries are spread over shards by a hash of the prompt, each with
// its own lock, so that rollout workers recording different prompts rarely
// wait for each other.
type Ledger struct {
	shards [numShards]shard
	seq    atomic.Uint64 // numbers entries in first-hand-out order
	watch  atomic.Pointer[func(Change)]
}

// Change is one event the ledger recorded.
type Change struct {
	Prompt string `json:"prompt"`
	// Event is taken, trained, dropped, requeued, failed, abandoned,
	// left_over or unconfirmed.
	Event string `json:"event"`
	// Training is set for trained; Kind says why for failed (the error
	// kind, see Kind) and for dropped and requeued ("over_stale": the
	// group's staleness exceeded the maximum, the one reason there is).
	Training *Training `json:"training,omitempty"`
	Kind     string    `json:"kind,omitempty"`
}

// Watch makes fn see every change recorded from now on; nil stops it. fn
// runs after the change is recorded, outside the ledger's locks, on the
// goroutine that recorded it (a rollout worker, the learner) — so a
// prompt's changes reach it in order, while changes of different prompts
// may arrive in another order than they were recorded — and it must
// be quick and never block: loop.Deps.LedgerObserver puts a queue in
// between. Without a watcher a change costs one atomic load more.
func (l *Ledger) Watch(fn func(Change)) {
	if fn == nil {
		l.watch.Store(nil)
		return
	}
	l.watch.Store(&fn)
}

// emit tells the watcher, if any, of c.
func (l *Ledger) emit(c func() Change) {
	if w := l.watch.Load(); w != nil {
		(*w)(c())
	}
}

const numShards = 32

type shard struct {
	mu sync.Mutex
	m  map[string]*entry
	_  [40]byte // keep neighbouring shards' locks off one cache line
}

// entry is an Entry with its place in the order and room for its first
// training, so that a prompt trained once costs no second allocation.
type entry struct {
	Entry
	seq   uint64
	first [1]Training
}

// seed hashes prompts to shards; any seed spreads them.
var seed = maphash.MakeSeed()

func (l *Ledger) update(prompt string, f func(*Entry)) {
	sh := &l.shards[maphash.String(seed, prompt)%numShards]
	sh.mu.Lock()
	e, ok := sh.m[prompt]
	if !ok {
		if sh.m == nil {
			sh.m = make(map[string]*entry)
		}
		e = &entry{Entry: Entry{Prompt: prompt}, seq: l.seq.Add(1)}
		e.TrainedAt = e.first[:0]
		sh.m[prompt] = e
	}
	f(&e.Entry)
	sh.mu.Unlock()
}

// Taken records that prompt was handed out (taken from the dataset).
func (l *Ledger) Taken(prompt string) {
	l.update(prompt, func(e *Entry) { e.HandedOut++ })
	l.emit(func() Change { return Change{Prompt: prompt, Event: "taken"} })
}

// Failed records that a rollout of prompt failed with err; the entry counts
// it under Kind(err).
func (l *Ledger) Failed(prompt string, err error) {
	kind := Kind(err)
	l.update(prompt, func(e *Entry) {
		e.Failed++
		if e.Failures == nil {
			e.Failures = make(map[string]int, 1)
		}
		e.Failures[kind]++
	})
	l.emit(func() Change { return Change{Prompt: prompt, Event: "failed", Kind: kind} })
}

// Abandoned records that a rollout of prompt was cut short by shutdown (or
// its group refused because the run was ending).
func (l *Ledger) Abandoned(prompt string) {
	l.count(prompt, "abandoned", "", func(e *Entry) { e.Abandoned++ })
}

// count records a change that only counts; kind is the change's Kind.
func (l *Ledger) count(prompt, event, kind string, f func(*Entry)) {
	l.update(prompt, f)
	l.emit(func() Change { return Change{Prompt: prompt, Event: event, Kind: kind} })
}

// OverStale is why a group is dropped or requeued: its staleness exceeded
// the run's maximum.
const OverStale = "over_stale"

// Trained records that a group of prompt was trained.
func (l *Ledger) Trained(prompt string, t Training) {
	l.update(prompt, func(e *Entry) {
		e.Trained++
		e.TrainedAt = append(e.TrainedAt, t)
	})
	l.emit(func() Change { return Change{Prompt: prompt, Event: "trained", Training: &t} })
}

// Dropped records that a group of prompt was discarded as over-stale.
func (l *Ledger) Dropped(prompt string) {
	l.count(prompt, "dropped", OverStale, func(e *Entry) { e.Dropped++ })
}

// Requeued records that a group of prompt was over-stale and its prompt
// went back to the dataset.
func (l *Ledger) Requeued(prompt string) {
	l.count(prompt, "requeued", OverStale, func(e *Entry) { e.Requeued++ })
}

// LeftOver records that a group of prompt was still in the buffer when the
// run ended.
func (l *Ledger) LeftOver(prompt string) {
	l.count(prompt, "left_over", "", func(e *Entry) { e.LeftOver++ })
}

// Unconfirmed records that a group of prompt was in a step the trainer did
// not confirm.
func (l *Ledger) Unconfirmed(prompt string) {
	l.count(prompt, "unconfirmed", "", func(e *Entry) { e.Unconfirmed++ })
}

// Entries returns a copy of every entry, in the order prompts were first
// handed out.
func (l *Ledger) Entries() []Entry {
	var all []*entry
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, e := range sh.m {
			c := &entry{Entry: e.Entry, seq: e.seq}
			c.TrainedAt = slices.Clone(e.TrainedAt)
			if len(c.TrainedAt) == 0 {
				c.TrainedAt = nil
			}
			if e.Failures != nil {
				c.Failures = maps.Clone(e.Failures)
			}
			all = append(all, c)
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b *entry) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Entry, len(all))
	for i, e := range all {
		out[i] = e.Entry
	}
	return out
}

// ErrUnaccounted is wrapped by Check's error.
var ErrUnaccounted = errors.New("ledger: hand-outs without an outcome")

// Check verifies, once a run has ended, that every hand-out of every prompt
// has exactly one outcome, and names the first prompt that does not.
func (l *Ledger) Check() error {
	for _, e := range l.Entries() {
		if e.HandedOut != e.Outcomes() {
			return fmt.Errorf("%w: prompt %q handed out %d times, %d outcomes (%+v)", ErrUnaccounted, e.Prompt, e.HandedOut, e.Outcomes(), e)
		}
	}
	return nil
}

// Summary is what a run's summary says of its prompts.
type Summary struct {
	// Prompts is the number of distinct prompts handed out.
	Prompts int `json:"prompts"`
	// TrainedOnce counts the prompts trained at least once; NeverTrained
	// lists (up to MaxListed of) the others, and NeverTrainedCount counts
	// them all.
	TrainedOnce       int      `json:"trained_at_least_once"`
	NeverTrainedCount int      `json:"never_trained"`
	NeverTrained      []string `json:"never_trained_prompts,omitempty"`
	// MostRequeued lists up to MaxListed prompts with the most requeues,
	// most first (ties by first hand-out).
	MostRequeued []Count `json:"most_requeued,omitempty"`
	// Totals sums every entry.
	Totals Entry `json:"totals"`
}

// Count is a prompt with a count.
type Count struct {
	Prompt string `json:"prompt"`
	N      int    `json:"n"`
}

// MaxListed bounds the prompts a Summary lists by name.
const MaxListed = 10

// Summary summarises the entries. It reads them in place (no copy of the
// ledger), so it costs one pass over the prompts.
func (l *Ledger) Summary() Summary {
	var s Summary
	type named struct {
		seq uint64
		Count
	}
	var never, req []named
	t := &s.Totals
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, e := range sh.m {
			s.Prompts++
			if e.Trained > 0 {
				s.TrainedOnce++
			} else {
				s.NeverTrainedCount++
				never = append(never, named{e.seq, Count{Prompt: e.Prompt}})
			}
			if e.Requeued > 0 {
				req = append(req, named{e.seq, Count{e.Prompt, e.Requeued}})
			}
			t.HandedOut += e.HandedOut
			t.Trained += e.Trained
			t.Dropped += e.Dropped
			t.Requeued += e.Requeued
			t.Failed += e.Failed
			t.Abandoned += e.Abandoned
			t.LeftOver += e.LeftOver
			t.Unconfirmed += e.Unconfirmed
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(never, func(a, b named) int { return cmp.Compare(a.seq, b.seq) })
	for _, n := range never[:min(len(never), MaxListed)] {
		s.NeverTrained = append(s.NeverTrained, n.Prompt)
	}
	slices.SortFunc(req, func(a, b named) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.seq, b.seq)) })
	for _, n := range req[:min(len(req), MaxListed)] {
		s.MostRequeued = append(s.MostRequeued, n.Count)
	}
	return s
}

// JSONL encodes entries as JSON lines, one entry a line, in order: the
// run folder's ledger.jsonl.
func JSONL(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range entries {
		if err := enc.Encode(&entries[i]); err != nil {
			return nil, fmt.Errorf("ledger: encode %q: %w", entries[i].Prompt, err)
		}
	}
	return buf.Bytes(), nil
}
