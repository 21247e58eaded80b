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
	"slices"
	"sync"

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

// Ledger collects the entries of one run. The zero value is empty and ready.
type Ledger struct {
	mu      sync.Mutex
	entries map[string]*Entry
	order   []*Entry // by first hand-out
}

func (l *Ledger) entry(prompt string) *Entry {
	if e, ok := l.entries[prompt]; ok {
		return e
	}
	if l.entries == nil {
		l.entries = make(map[string]*Entry)
	}
	e := &Entry{Prompt: prompt}
	l.entries[prompt] = e
	l.order = append(l.order, e)
	return e
}

func (l *Ledger) update(prompt string, f func(*Entry)) {
	l.mu.Lock()
	f(l.entry(prompt))
	l.mu.Unlock()
}

// Taken records that prompt was handed out (taken from the dataset).
func (l *Ledger) Taken(prompt string) { l.update(prompt, func(e *Entry) { e.HandedOut++ }) }

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
}

// Abandoned records that a rollout of prompt was cut short by shutdown (or
// its group refused because the run was ending).
func (l *Ledger) Abandoned(prompt string) { l.update(prompt, func(e *Entry) { e.Abandoned++ }) }

// Trained records that a group of prompt was trained.
func (l *Ledger) Trained(prompt string, t Training) {
	l.update(prompt, func(e *Entry) {
		e.Trained++
		e.TrainedAt = append(e.TrainedAt, t)
	})
}

// Dropped records that a group of prompt was discarded as over-stale.
func (l *Ledger) Dropped(prompt string) { l.update(prompt, func(e *Entry) { e.Dropped++ }) }

// Requeued records that a group of prompt was over-stale and its prompt
// went back to the dataset.
func (l *Ledger) Requeued(prompt string) { l.update(prompt, func(e *Entry) { e.Requeued++ }) }

// LeftOver records that a group of prompt was still in the buffer when the
// run ended.
func (l *Ledger) LeftOver(prompt string) { l.update(prompt, func(e *Entry) { e.LeftOver++ }) }

// Unconfirmed records that a group of prompt was in a step the trainer did
// not confirm.
func (l *Ledger) Unconfirmed(prompt string) { l.update(prompt, func(e *Entry) { e.Unconfirmed++ }) }

// Entries returns a copy of every entry, in the order prompts were first
// handed out.
func (l *Ledger) Entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Entry, len(l.order))
	for i, e := range l.order {
		out[i] = *e
		out[i].TrainedAt = slices.Clone(e.TrainedAt)
		if e.Failures != nil {
			out[i].Failures = make(map[string]int, len(e.Failures))
			for k, v := range e.Failures {
				out[i].Failures[k] = v
			}
		}
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

// Summary summarises the entries.
func (l *Ledger) Summary() Summary {
	entries := l.Entries()
	s := Summary{Prompts: len(entries)}
	var req []Count
	for _, e := range entries {
		if e.Trained > 0 {
			s.TrainedOnce++
		} else {
			s.NeverTrainedCount++
			if len(s.NeverTrained) < MaxListed {
				s.NeverTrained = append(s.NeverTrained, e.Prompt)
			}
		}
		if e.Requeued > 0 {
			req = append(req, Count{e.Prompt, e.Requeued})
		}
		t := &s.Totals
		t.HandedOut += e.HandedOut
		t.Trained += e.Trained
		t.Dropped += e.Dropped
		t.Requeued += e.Requeued
		t.Failed += e.Failed
		t.Abandoned += e.Abandoned
		t.LeftOver += e.LeftOver
		t.Unconfirmed += e.Unconfirmed
	}
	slices.SortStableFunc(req, func(a, b Count) int { return cmp.Compare(b.N, a.N) })
	if len(req) > MaxListed {
		req = req[:MaxListed]
	}
	s.MostRequeued = req
	s.Totals.Prompt = "" // a sum, not a prompt
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
