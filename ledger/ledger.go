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
	hash   func(string) uint64 // nil: maphash (tests collide prompts on purpose)
	seq    atomic.Uint64       // numbers entries in first-hand-out order
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

const numShards = 32

// A shard finds entries by the 64-bit hash of their prompt, which costs
// no string comparison on the way (a prompt's Key is usually the same
// string each time, so the check that confirms a hit is a pointer
// comparison); a prompt whose hash another prompt already holds lives in
// spill.
type shard struct {
	mu    sync.Mutex
	m     map[uint64]*entry
	spill map[string]*entry
	slab  []entry // entries not yet handed out, allocated slabSize at a time
	_     [8]byte // keep neighbouring shards' locks off one cache line
}

// slabSize is how many entries a shard allocates at once: one allocation
// per slabSize new prompts instead of one per prompt.
const slabSize = 64

// The counters of an entry, in entry.n.
const (
	nHandedOut = iota
	nTrained
	nDropped
	nRequeued
	nFailed
	nAbandoned
	nLeftOver
	nUnconfirmed
	numCounters
)

// entry is the stored form of an Entry: compact counters (uint32: four
// billion hand-outs of one prompt would wrap), its place in the
// order, and room for its first training inline, so that a prompt trained
// once costs no allocation of its own.
type entry struct {
	prompt   string
	seq      uint64
	n        [numCounters]uint32
	first    Training
	more     []Training // the trainings after the first
	failures map[string]int
}

// public returns e as an Entry that shares nothing with e.
func (e *entry) public() Entry {
	out := Entry{
		Prompt: e.prompt, HandedOut: int(e.n[nHandedOut]), Trained: int(e.n[nTrained]),
		Dropped: int(e.n[nDropped]), Requeued: int(e.n[nRequeued]), Failed: int(e.n[nFailed]),
		Abandoned: int(e.n[nAbandoned]), LeftOver: int(e.n[nLeftOver]), Unconfirmed: int(e.n[nUnconfirmed]),
	}
	if e.n[nTrained] > 0 {
		out.TrainedAt = make([]Training, 0, 1+len(e.more))
		out.TrainedAt = append(append(out.TrainedAt, e.first), e.more...)
	}
	if e.failures != nil {
		out.Failures = maps.Clone(e.failures)
	}
	return out
}

// seed hashes prompts to shards; any seed spreads them.
var seed = maphash.MakeSeed()

// lock returns prompt's entry, created if new, with its shard locked; the
// caller unlocks the shard.
func (l *Ledger) lock(prompt string) (*shard, *entry) {
	var h uint64
	if l.hash != nil {
		h = l.hash(prompt)
	} else {
		h = maphash.String(seed, prompt)
	}
	sh := &l.shards[h%numShards]
	sh.mu.Lock()
	e := sh.m[h]
	if e != nil && e.prompt == prompt {
		return sh, e
	}
	if e != nil {
		if e = sh.spill[prompt]; e != nil {
			return sh, e
		}
	}
	if len(sh.slab) == 0 {
		sh.slab = make([]entry, slabSize)
	}
	fresh := &sh.slab[0]
	sh.slab = sh.slab[1:]
	fresh.prompt, fresh.seq = prompt, l.seq.Add(1)
	switch {
	case sh.m == nil:
		sh.m = map[uint64]*entry{h: fresh}
	case sh.m[h] == nil:
		sh.m[h] = fresh
	default:
		if sh.spill == nil {
			sh.spill = make(map[string]*entry)
		}
		sh.spill[prompt] = fresh
	}
	return sh, fresh
}

// each calls f on every entry of sh, which the caller has locked.
func (sh *shard) each(f func(*entry)) {
	for _, e := range sh.m {
		f(e)
	}
	for _, e := range sh.spill {
		f(e)
	}
}

// add counts one change of prompt under counter c and tells the watcher.
func (l *Ledger) add(prompt string, c int, event, kind string) {
	sh, e := l.lock(prompt)
	e.n[c]++
	sh.mu.Unlock()
	if w := l.watch.Load(); w != nil {
		(*w)(Change{Prompt: prompt, Event: event, Kind: kind})
	}
}

// Taken records that prompt was handed out (taken from the dataset).
func (l *Ledger) Taken(prompt string) { l.add(prompt, nHandedOut, "taken", "") }

// Failed records that a rollout of prompt failed with err; the entry counts
// it under Kind(err).
func (l *Ledger) Failed(prompt string, err error) {
	kind := Kind(err)
	sh, e := l.lock(prompt)
	e.n[nFailed]++
	if e.failures == nil {
		e.failures = make(map[string]int, 1)
	}
	e.failures[kind]++
	sh.mu.Unlock()
	if w := l.watch.Load(); w != nil {
		(*w)(Change{Prompt: prompt, Event: "failed", Kind: kind})
	}
}

// Abandoned records that a rollout of prompt was cut short by shutdown (or
// its group refused because the run was ending).
func (l *Ledger) Abandoned(prompt string) { l.add(prompt, nAbandoned, "abandoned", "") }

// OverStale is why a group is dropped or requeued: its staleness exceeded
// the run's maximum.
const OverStale = "over_stale"

// Trained records that a group of prompt was trained.
func (l *Ledger) Trained(prompt string, t Training) {
	sh, e := l.lock(prompt)
	if e.n[nTrained] == 0 {
		e.first = t
	} else {
		e.more = append(e.more, t)
	}
	e.n[nTrained]++
	sh.mu.Unlock()
	if w := l.watch.Load(); w != nil {
		c := Change{Prompt: prompt, Event: "trained", Training: new(Training)}
		*c.Training = t // a copy, so that t itself never escapes
		(*w)(c)
	}
}

// Dropped records that a group of prompt was discarded as over-stale.
func (l *Ledger) Dropped(prompt string) { l.add(prompt, nDropped, "dropped", OverStale) }

// Requeued records that a group of prompt was over-stale and its prompt
// went back to the dataset.
func (l *Ledger) Requeued(prompt string) { l.add(prompt, nRequeued, "requeued", OverStale) }

// LeftOver records that a group of prompt was still in the buffer when the
// run ended.
func (l *Ledger) LeftOver(prompt string) { l.add(prompt, nLeftOver, "left_over", "") }

// Unconfirmed records that a group of prompt was in a step the trainer did
// not confirm.
func (l *Ledger) Unconfirmed(prompt string) { l.add(prompt, nUnconfirmed, "unconfirmed", "") }

// Entries returns a copy of every entry, in the order prompts were first
// handed out.
func (l *Ledger) Entries() []Entry {
	type ordered struct {
		seq uint64
		e   Entry
	}
	var all []ordered
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		sh.each(func(e *entry) { all = append(all, ordered{e.seq, e.public()}) })
		sh.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b ordered) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Entry, len(all))
	for i := range all {
		out[i] = all[i].e
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
		sh.each(func(e *entry) {
			s.Prompts++
			if e.n[nTrained] > 0 {
				s.TrainedOnce++
			} else {
				s.NeverTrainedCount++
				never = append(never, named{e.seq, Count{Prompt: e.prompt}})
			}
			if r := e.n[nRequeued]; r > 0 {
				req = append(req, named{e.seq, Count{e.prompt, int(r)}})
			}
			t.HandedOut += int(e.n[nHandedOut])
			t.Trained += int(e.n[nTrained])
			t.Dropped += int(e.n[nDropped])
			t.Requeued += int(e.n[nRequeued])
			t.Failed += int(e.n[nFailed])
			t.Abandoned += int(e.n[nAbandoned])
			t.LeftOver += int(e.n[nLeftOver])
			t.Unconfirmed += int(e.n[nUnconfirmed])
		})
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

// Reserve makes room for n more prompts, so that a run that knows the size
// of its dataset does not grow the ledger's tables as it goes.
func (l *Ledger) Reserve(n int) {
	if n <= 0 {
		return
	}
	per := n/numShards + n/numShards/8 + 1 // a hash spreads prompts a little unevenly
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		if sh.m == nil {
			sh.m = make(map[uint64]*entry, per)
		} else {
			grown := make(map[uint64]*entry, len(sh.m)+per)
			maps.Copy(grown, sh.m)
			sh.m = grown
		}
		if len(sh.slab) < per {
			sh.slab = make([]entry, per)
		}
		sh.mu.Unlock()
	}
}
