package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

// A naive reference: random events on random prompts, applied to a Ledger
// from several goroutines and to plain counters; entries, check and
// summary agree — with the ledger's own hash, with one under which many
// prompts collide (the spill path), and with room reserved up front.
func TestLedgerAgreesWithCounters(t *testing.T) {
	t.Parallel()
	for name, fresh := range map[string]func() *Ledger{
		"maphash":  func() *Ledger { return &Ledger{} },
		"collide":  func() *Ledger { return &Ledger{hash: func(s string) uint64 { return uint64(len(s) % 3) }} },
		"reserved": func() *Ledger { l := &Ledger{}; l.Reserve(10); return l },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			agreesWithCounters(t, fresh)
		})
	}
}

func agreesWithCounters(t *testing.T, fresh func() *Ledger) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 1 + rng.IntN(30)
		type counts struct{ taken, outcomes, trained, requeued int }
		want := map[string]*counts{}
		var ops []func(*Ledger)
		for range 200 {
			p := fmt.Sprintf("p%d", rng.IntN(n))
			if want[p] == nil {
				want[p] = &counts{}
			}
			c := want[p]
			c.taken++
			ops = append(ops, func(l *Ledger) { l.Taken(p) })
			c.outcomes++
			switch rng.IntN(7) {
			case 0:
				c.trained++
				step := rng.IntN(100)
				ops = append(ops, func(l *Ledger) { l.Trained(p, Training{Step: step}) })
			case 1:
				ops = append(ops, func(l *Ledger) { l.Dropped(p) })
			case 2:
				c.requeued++
				ops = append(ops, func(l *Ledger) { l.Requeued(p) })
			case 3:
				ops = append(ops, func(l *Ledger) { l.Failed(p, errors.New("x")) })
			case 4:
				ops = append(ops, func(l *Ledger) { l.Abandoned(p) })
			case 5:
				ops = append(ops, func(l *Ledger) { l.LeftOver(p) })
			case 6:
				ops = append(ops, func(l *Ledger) { l.Unconfirmed(p) })
			}
		}
		// Each prompt's hand-out precedes its outcome; the pairs run
		// concurrently.
		l := fresh()
		var wg sync.WaitGroup
		for i := 0; i < len(ops); i += 2 {
			wg.Go(func() { ops[i](l); ops[i+1](l) })
		}
		wg.Wait()
		require.NoError(t, l.Check())
		s := l.Summary()
		assert.Equal(t, len(want), s.Prompts)
		trainedOnce, never, total := 0, 0, 0
		for _, e := range l.Entries() {
			c := want[e.Prompt]
			require.NotNil(t, c)
			assert.Equal(t, c.taken, e.HandedOut)
			assert.Equal(t, c.outcomes, e.Outcomes())
			assert.Equal(t, c.trained, e.Trained)
			assert.Len(t, e.TrainedAt, c.trained)
			assert.Equal(t, c.requeued, e.Requeued)
			if c.trained > 0 {
				trainedOnce++
			} else {
				never++
			}
			total += c.taken
		}
		assert.Equal(t, trainedOnce, s.TrainedOnce)
		assert.Equal(t, never, s.NeverTrainedCount)
		assert.Len(t, s.NeverTrained, min(never, MaxListed))
		assert.Equal(t, total, s.Totals.HandedOut)
		assert.Equal(t, total, s.Totals.Outcomes())
		for i := 1; i < len(s.MostRequeued); i++ {
			assert.GreaterOrEqual(t, s.MostRequeued[i-1].N, s.MostRequeued[i].N)
		}
	}
}

func TestCheckNamesTheUnaccountedPrompt(t *testing.T) {
	t.Parallel()
	var l Ledger
	l.Taken("a")
	l.Trained("a", Training{})
	l.Taken("b")
	err := l.Check()
	require.ErrorIs(t, err, ErrUnaccounted)
	assert.Contains(t, err.Error(), `prompt "b" handed out 1 times, 0 outcomes`)
}

func TestKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("wrapped: %w", &rollout.PanicError{Where: "reward", Value: "boom"}), "panic:reward"},
		{fmt.Errorf("%w (64 turns)", rollout.ErrTooManyTurns), "too_many_turns"},
		{fmt.Errorf("sample: %w", rl.ErrTransient), "transient"},
		{fmt.Errorf("x: %w", errContext()), "cancelled"},
		{errors.New("plain"), "error"},
	} {
		assert.Equal(t, tc.want, Kind(tc.err), "%v", tc.err)
	}
	var l Ledger
	l.Taken("p")
	l.Failed("p", &rollout.PanicError{Where: "env.Step"})
	assert.Equal(t, map[string]int{"panic:env.Step": 1}, l.Entries()[0].Failures)
}

// Entries are copies: changing one leaves the ledger as it was.
func TestEntriesAreCopies(t *testing.T) {
	t.Parallel()
	var l Ledger
	l.Taken("p")
	l.Trained("p", Training{Step: 3})
	l.Taken("p")
	l.Failed("p", errors.New("x"))
	e := l.Entries()
	e[0].TrainedAt[0].Step = 99
	e[0].Failures["error"] = 7
	again := l.Entries()
	assert.Equal(t, 3, again[0].TrainedAt[0].Step)
	assert.Equal(t, 1, again[0].Failures["error"])
}

// ledger.jsonl is one entry a line, and reads back as the entries.
func TestJSONLRoundTrip(t *testing.T) {
	t.Parallel()
	var l Ledger
	l.Taken("a")
	l.Trained("a", Training{Step: 2, Version: 5, Staleness: 1})
	l.Taken("b")
	l.Requeued("b")
	l.Taken("b")
	l.Failed("b", errors.New("x"))
	b, err := JSONL(l.Entries())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 2)
	assert.JSONEq(t, `{"prompt":"a","handed_out":1,"trained":1,"trained_at":[{"step":2,"version":5,"staleness":1}]}`, lines[0])
	assert.JSONEq(t, `{"prompt":"b","handed_out":2,"trained":0,"requeued":1,"failed":1,"failures":{"error":1}}`, lines[1])
	var back []Entry
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var e Entry
		require.NoError(t, dec.Decode(&e))
		back = append(back, e)
	}
	assert.Equal(t, l.Entries(), back)
}

// A watcher sees each change once, with what it carries; nil stops it.
func TestWatch(t *testing.T) {
	t.Parallel()
	var l Ledger
	var got []Change
	l.Watch(func(c Change) { got = append(got, c) })
	l.Taken("a")
	l.Trained("a", Training{Step: 1, Version: 2})
	l.Taken("b")
	l.Failed("b", &rollout.PanicError{Where: "reward"})
	l.Taken("c")
	l.Requeued("c")
	l.Watch(nil)
	l.Taken("c")
	require.Len(t, got, 6)
	assert.Equal(t, Change{Prompt: "a", Event: "taken"}, got[0])
	assert.Equal(t, Change{Prompt: "a", Event: "trained", Training: &Training{Step: 1, Version: 2}}, got[1])
	assert.Equal(t, Change{Prompt: "b", Event: "failed", Kind: "panic:reward"}, got[3])
	assert.Equal(t, Change{Prompt: "c", Event: "requeued", Kind: OverStale}, got[5])
	assert.Equal(t, 2, l.Entries()[2].HandedOut, "recording goes on without a watcher")
}
