package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func p(n int64) *int64 { return &n }

// TestSequencer plays arrivals and checks what each releases, against the
// rule: seq_ids are released in increasing order without gaps, each once.
func TestSequencer(t *testing.T) {
	t.Parallel()
	type step struct {
		seq     *int64
		release []string
		parked  bool
		dupOf   string
		stale   bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{seq: p(1), release: []string{"1"}}, {seq: p(2), release: []string{"2"}}}},
		{"reversed", []step{{seq: p(3), parked: true}, {seq: p(2), parked: true}, {seq: p(1), release: []string{"1", "2", "3"}}}},
		{"gap filled later", []step{{seq: p(1), release: []string{"1"}}, {seq: p(3), parked: true}, {seq: p(4), parked: true}, {seq: p(2), release: []string{"2", "3", "4"}}}},
		{"duplicate applied", []step{{seq: p(1), release: []string{"1"}}, {seq: p(1), dupOf: "1"}}},
		{"duplicate parked", []step{{seq: p(2), parked: true}, {seq: p(2), dupOf: "2"}}},
		{"starts at zero", []step{{seq: p(0), release: []string{"0"}}, {seq: p(1), release: []string{"1"}}}},
		{"unsequenced passes", []step{{seq: p(2), parked: true}, {seq: nil, release: []string{"-"}}, {seq: p(1), release: []string{"1", "2"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSequencer[string]()
			for i, st := range c.steps {
				id := "-"
				if st.seq != nil {
					id = string(rune('0' + *st.seq))
				}
				r := s.submit(st.seq, id, id)
				assert.Equal(t, st.release, r.release, "step %d", i)
				assert.Equal(t, st.parked, r.parked, "step %d", i)
				assert.Equal(t, st.dupOf, r.dupOf, "step %d", i)
				assert.Equal(t, st.stale, r.stale, "step %d", i)
			}
		})
	}
}

// TestSequencerPermutations checks every arrival order of 1..4 (each sent
// twice, as a retry would) releases 1..4 exactly once, in order.
func TestSequencerPermutations(t *testing.T) {
	t.Parallel()
	seqs := []int64{1, 2, 3, 4, 1, 2, 3, 4}
	var permute func(k int)
	count := 0
	permute = func(k int) {
		if k == len(seqs) {
			s := newSequencer[int64]()
			var got []int64
			for _, n := range seqs {
				got = append(got, s.submit(p(n), "x", n).release...)
			}
			require.Equal(t, []int64{1, 2, 3, 4}, got, "arrivals %v", seqs)
			count++
			return
		}
		for i := k; i < len(seqs); i++ {
			seqs[k], seqs[i] = seqs[i], seqs[k]
			permute(k + 1)
			seqs[k], seqs[i] = seqs[i], seqs[k]
		}
	}
	permute(0)
	assert.Equal(t, 40320, count, "8! orders")
}

func TestSequencerForgetsOldSeqs(t *testing.T) {
	t.Parallel()
	s := newSequencer[int]()
	for n := int64(1); n <= maxSeen+10; n++ {
		require.Len(t, s.submit(p(n), "id", 0).release, 1)
	}
	assert.True(t, s.submit(p(1), "again", 0).stale, "too old to remember: answered as stale, never re-applied")
	assert.Equal(t, "id", s.submit(p(maxSeen+10), "again", 0).dupOf)
}

func TestFutureStore(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	s := newFutureStore(clock, time.Minute, 2, 10)
	a, err := s.create("o", "k")
	require.NoError(t, err)
	b, err := s.create("o", "k")
	require.NoError(t, err)
	_, err = s.create("o", "k")
	require.ErrorIs(t, err, errBusy, "two running, the most allowed")
	s.succeed(a, map[string]int{"x": 1})
	s.complete(a, []byte(`{"ignored":true}`))
	assert.JSONEq(t, `{"x":1}`, string(a.body), "first result wins")
	c, err := s.create("o", "k")
	require.NoError(t, err, "room again after one finished")
	s.discard(c)
	assert.Equal(t, 1, s.inFlight())

	f, st := s.get("o", a.id)
	assert.Equal(t, futureFound, st)
	assert.Same(t, a, f)
	_, st = s.get("other", a.id)
	assert.Equal(t, futureUnknown, st, "another owner sees nothing")
	now = now.Add(2 * time.Minute)
	_, st = s.get("o", a.id)
	assert.Equal(t, futureExpired, st)
	_, st = s.get("o", b.id)
	assert.Equal(t, futureFound, st, "running futures never expire")
	now = now.Add(5 * time.Minute)
	_, st = s.get("o", a.id)
	assert.Equal(t, futureUnknown, st, "expired ids are forgotten in the end")
}

func TestIdemStore(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	s := newIdemStore(func() time.Time { return now }, time.Minute, 2)
	sum := [32]byte{1}
	e, first := s.begin("k1", sum)
	require.True(t, first)
	e2, first := s.begin("k1", sum)
	require.False(t, first)
	require.Same(t, e, e2)
	s.finish("k1", e, 200, []byte("ok"))
	<-e2.done
	assert.Equal(t, 200, e2.status)

	// A 503 answer is forgotten so the retry is tried for real.
	e, _ = s.begin("k2", sum)
	s.finish("k2", e, 503, nil)
	_, first = s.begin("k2", sum)
	assert.True(t, first)

	// Bounded: beyond max entries, the oldest go.
	s.begin("k3", sum)
	s.begin("k4", sum)
	_, first = s.begin("k1", sum)
	assert.True(t, first, "k1 was evicted")
	assert.LessOrEqual(t, len(s.entries), 3)
}
