package buffer

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// The tests here drive the moments when a waiting call's context ends.
// The race between a grant and the end of ctx is forced, not hoped for:
// the test ends ctx inside the same critical section that makes the grant
// (through change, the driver's own lock-apply-wake step), so the waiter
// either already gave up and waits for the lock, or finds both the grant
// and ctx's end when it looks. Either way the outcome is fixed.

func TestAdmitDoneOnEntryFails(t *testing.T) {
	t.Parallel()
	b, err := New(Config{GroupsPerBatch: 1}, nil)
	require.NoError(t, err)
	b.Serve(0)
	_, err = b.Admit(cancelled())
	require.ErrorIs(t, err, errGone, "ctx done before the call: no admission, though a place is free")
	assert.Equal(t, Stats{}, b.Stats())
	v, err := b.Admit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, policy.Version(0), v)
}

// TestAdmitGrantRacesCancel: the place a waiting Admit is granted as its
// ctx ends is handed back, as golang.org/x/sync/semaphore's Acquire hands
// back its tokens: Admit fails and nothing is counted (a high-water mark
// aside), and the place goes to the next caller.
func TestAdmitGrantRacesCancel(t *testing.T) {
	t.Parallel()
	for range 32 {
		b, err := New(Config{GroupsPerBatch: 1}, nil) // k = 0, pace: one place
		require.NoError(t, err)
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan error, 1)
		go func() { _, err := b.Admit(ctx); done <- err }()
		waitUntil(b, func() bool { return b.admit.Len() == 1 })
		b.change(func() {
			cancel(errGone)
			b.core.Serve(0) // the place, granted to the waiter by change
		})
		require.ErrorIs(t, <-done, errGone)
		st := b.Stats()
		assert.Equal(t, int64(1), st.Peak, "Peak keeps the moment of the grant")
		st.Peak = 0
		require.Equal(t, Stats{}, st, "handed back: not admitted, not failed, not running")

		v, err := b.Admit(context.Background())
		require.NoError(t, err, "the place is free again")
		assert.Equal(t, policy.Version(0), v)
		assert.Equal(t, int64(1), b.Stats().Admitted)
	}
}

// TestPutGrantRacesCancel: a place granted to a waiting Put as its ctx ends
// is handed back, and the rollout is released as by Fail.
func TestPutGrantRacesCancel(t *testing.T) {
	t.Parallel()
	for range 32 {
		b, err := New(Config{GroupsPerBatch: 1, MaxStaleness: 5, Policy: rl.Drop, Limit: 1}, nil)
		require.NoError(t, err)
		b.Serve(0)
		bg := context.Background()
		v, err := b.Admit(bg)
		require.NoError(t, err)
		require.NoError(t, b.Put(bg, rl.Group{Admitted: v}))
		v, err = b.Admit(bg)
		require.NoError(t, err)
		ctx, cancel := context.WithCancelCause(bg)
		done := make(chan error, 1)
		go func() { done <- b.Put(ctx, rl.Group{Admitted: v}) }()
		waitUntil(b, func() bool { return b.put.Len() == 1 })
		var taken []rl.Group
		b.change(func() {
			cancel(errGone)
			b.core.Expire(0, nil)
			taken = b.core.Take(nil) // the learner frees the place the waiter is granted
		})
		require.Len(t, taken, 1)
		require.ErrorIs(t, <-done, errGone)
		b.mu.Lock()
		reserve := b.reserve
		b.mu.Unlock()
		assert.Zero(t, reserve, "the granted place was handed back")
		st := b.Stats()
		assert.Equal(t, int64(1), st.Failed, "the rollout was released")
		assert.Equal(t, int64(0), st.Running)
		assert.Equal(t, int64(0), st.Held)
		assert.Equal(t, st.Admitted, st.Accepted+st.Failed)
	}
}

// TestTakeGrantRacesCancelKeeps: a batch taken on a waiting Take's behalf
// as its ctx ends is returned, not handed back (the learner's step has been
// recorded).
func TestTakeGrantRacesCancelKeeps(t *testing.T) {
	t.Parallel()
	for range 32 {
		b, adm := oneShort(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		out := takeAsync(ctx, b, 0)
		waitUntil(b, func() bool { return b.taker.Len() == 1 })
		b.change(func() {
			cancel(errGone)
			b.core.Put(rl.Group{Admitted: adm[1]}) // completes the batch, taken for the waiter
		})
		r := <-out
		require.NoError(t, r.err)
		assert.Equal(t, []uint64{0, 1}, ids(r.gs))
		assert.Equal(t, int64(2), b.Stats().Trained)
		assert.Zero(t, b.Len())
	}
}

func TestTakeCancel(t *testing.T) {
	t.Parallel()
	b, adm := oneShort(t)
	bg := context.Background()

	dst := []rl.Group{{ID: 99}}
	got, err := b.Take(cancelled(), 0, dst)
	require.ErrorIs(t, err, errGone, "one group is not a batch: Take waits, and its ctx has ended")
	assert.Equal(t, []uint64{99}, ids(got), "dst comes back as it was")

	ctx, cancel := context.WithCancelCause(bg)
	out := takeAsync(ctx, b, 0)
	waitUntil(b, func() bool { return b.taker.Len() == 1 })
	cancel(errGone)
	require.ErrorIs(t, (<-out).err, errGone)
	assert.Zero(t, b.Stats().Trained, "nothing taken")

	require.NoError(t, b.Put(bg, rl.Group{Admitted: adm[1]}))
	got, err = b.Take(bg, 0, dst)
	require.NoError(t, err)
	assert.Equal(t, []uint64{99, 0, 1}, ids(got), "the batch appended to dst")
}

// TestAdmitWaitersInOrder: waiting rollouts are admitted in arrival order,
// as many as the window allows (k = 0: one batch per served version).
func TestAdmitWaitersInOrder(t *testing.T) {
	t.Parallel()
	const n = 3
	b, err := New(Config{GroupsPerBatch: n}, nil)
	require.NoError(t, err)
	bg := context.Background()
	var res [2 * n]chan policy.Version
	var wg sync.WaitGroup
	for i := range res {
		res[i] = make(chan policy.Version, 1)
		wg.Go(func() {
			v, err := b.Admit(bg)
			assert.NoError(t, err)
			res[i] <- v
		})
		waitUntil(b, func() bool { return b.admit.Len() == i+1 })
	}
	notYet := func(from int) {
		t.Helper()
		for i := from; i < len(res); i++ {
			select {
			case <-res[i]:
				t.Fatalf("waiter %d admitted out of turn", i)
			default:
			}
		}
	}
	b.Serve(0)
	for i := range n {
		assert.Equal(t, policy.Version(0), <-res[i], "waiter %d", i)
	}
	notYet(n)
	for range n {
		require.NoError(t, b.Put(bg, rl.Group{Admitted: 0}))
	}
	_, err = b.Take(bg, 0, nil)
	require.NoError(t, err)
	notYet(n) // nothing until the sampler serves version 1
	b.Serve(1)
	for i := n; i < len(res); i++ {
		assert.Equal(t, policy.Version(1), <-res[i], "waiter %d", i)
	}
	wg.Wait()
}

// TestConcurrentPaceWithFailures runs workers, some of whose rollouts fail,
// against a learner under pacing: every batch is full and fresh enough even
// when each group carries the oldest version it could (its admission),
// nothing is dropped, and the counters balance.
func TestConcurrentPaceWithFailures(t *testing.T) {
	t.Parallel()
	const gpb, k, steps = 4, 1, 50
	b, err := New(Config{GroupsPerBatch: gpb, MaxStaleness: k}, nil)
	require.NoError(t, err)
	b.Serve(0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var next atomic.Uint64
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				adm, err := b.Admit(ctx)
				if err != nil {
					return
				}
				if (i+w)%7 == 0 {
					b.Fail(adm)
					continue
				}
				if err := b.Put(ctx, rl.Group{ID: next.Add(1), Admitted: adm, Version: adm}); err != nil {
					return
				}
			}
		})
	}
	for s := range policy.Version(steps) {
		gs, err := b.Take(ctx, s, nil)
		require.NoError(t, err)
		require.Len(t, gs, gpb)
		for _, g := range gs {
			require.LessOrEqual(t, g.Staleness(s), int64(k), "step %d", s)
		}
		b.Serve(s + 1)
	}
	cancel()
	wg.Wait()
	st := b.Stats()
	assert.Equal(t, int64(steps*gpb), st.Trained)
	assert.Zero(t, st.Dropped+st.Requeued, "pacing wastes nothing")
	assert.Zero(t, st.Running)
	assert.Equal(t, st.Admitted, st.Accepted+st.Failed)
	assert.Equal(t, st.Accepted, st.Trained+st.Held)
	assert.Equal(t, int64(b.Len()), st.Held)
}
