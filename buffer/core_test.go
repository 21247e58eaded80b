package buffer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{GroupsPerBatch: 0}, "GroupsPerBatch is 0"},
		{Config{GroupsPerBatch: 2, MaxStaleness: -1}, "MaxStaleness is -1"},
		{Config{GroupsPerBatch: 4, Limit: 2}, "Limit is 2; must be ≥ GroupsPerBatch 4"},
		{Config{GroupsPerBatch: 1, Policy: "evict"}, `Policy is "evict"; allowed: pace, drop, requeue`},
	}
	for _, tt := range tests {
		_, err := NewCore(tt.cfg)
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), tt.want)
	}
}

// admitPut admits a rollout and puts a group of version v for it.
func admitPut(t *testing.T, c *Core, id uint64, v policy.Version) bool {
	t.Helper()
	adm, ok := c.Admit()
	require.True(t, ok, "admission of group %d", id)
	require.LessOrEqual(t, adm, v)
	return c.Put(rl.Group{ID: id, Admitted: adm, Version: v})
}

func ids(gs []rl.Group) []uint64 {
	out := make([]uint64, len(gs))
	for i, g := range gs {
		out[i] = g.ID
	}
	return out
}

func TestDropTranscript(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{GroupsPerBatch: 2, MaxStaleness: 1, Policy: rl.Drop, Limit: 4})
	require.NoError(t, err)
	c.Serve(0)
	for id := range uint64(3) {
		require.False(t, admitPut(t, c, id, 0))
	}
	assert.Equal(t, []uint64{0, 1}, ids(c.Take(nil)), "oldest first")
	c.Serve(1)
	require.False(t, admitPut(t, c, 3, 1))
	// The learner is at version 2 now: group 2 (version 0) has staleness 2 > 1.
	expired := c.Expire(2, nil)
	assert.Equal(t, []uint64{2}, ids(expired))
	assert.False(t, c.CanTake(), "one group left")
	c.Serve(2)
	require.False(t, admitPut(t, c, 4, 2))
	assert.Equal(t, []uint64{3, 4}, ids(c.Take(nil)))
	// A group that arrives already over-stale never enters.
	c.Serve(2)
	adm, ok := c.Admit()
	require.True(t, ok)
	c.Expire(4, nil)
	assert.True(t, c.Put(rl.Group{ID: 5, Admitted: adm, Version: 2}))
	st := c.Stats()
	assert.Equal(t, int64(2), st.Dropped)
	assert.Equal(t, int64(0), st.Requeued)
	assert.Equal(t, int64(4), st.Trained)
	assert.Equal(t, int64(6), st.Accepted)
	assert.Equal(t, st.Accepted, st.Trained+st.Dropped+st.Requeued+st.Drained+st.Held)
}

func TestRequeueCountsRequeued(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{GroupsPerBatch: 1, MaxStaleness: 1, Policy: rl.Requeue})
	require.NoError(t, err)
	c.Serve(0)
	admitPut(t, c, 0, 0)
	admitPut(t, c, 1, 0)
	admitPut(t, c, 2, 0)
	require.True(t, c.CanTake())
	c.Take(nil)
	c.Take(nil)
	got := c.Expire(2, nil)
	assert.Equal(t, []uint64{2}, ids(got))
	assert.Equal(t, int64(1), c.Stats().Requeued)
	assert.Equal(t, int64(0), c.Stats().Dropped)
}

func TestOrderingAndBound(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{GroupsPerBatch: 1, MaxStaleness: 3, Policy: rl.Drop, Limit: 3})
	require.NoError(t, err)
	c.Serve(0)
	a0, _ := c.Admit()
	c.Serve(1)
	a1, _ := c.Admit()
	a2, _ := c.Admit()
	// Arrive out of order; the buffer orders by admitted version, then arrival.
	c.Put(rl.Group{Key: "a", Admitted: a1, Version: 2}) // accepted first: ID 0
	c.Put(rl.Group{Key: "b", Admitted: a1, Version: 1}) // ID 1
	assert.True(t, c.CanPut())
	c.Put(rl.Group{Key: "c", Admitted: a0, Version: 1}) // ID 2
	assert.False(t, c.CanPut(), "limit 3 reached")
	_ = a2
	var got []uint64
	for c.CanTake() {
		got = append(got, ids(c.Take(nil))...)
	}
	assert.Equal(t, []uint64{2, 0, 1}, got, "admitted version first, then arrival")
}

func TestDrainAccountsEverything(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{GroupsPerBatch: 2, MaxStaleness: 1})
	require.NoError(t, err)
	c.Serve(0)
	for id := range uint64(3) {
		admitPut(t, c, id, 0)
	}
	c.Take(nil)
	left := c.Drain(nil)
	assert.Equal(t, []uint64{2}, ids(left))
	st := c.Stats()
	assert.Equal(t, int64(1), st.Drained)
	assert.Equal(t, int64(0), st.Held)
	assert.Equal(t, int64(0), st.Discarded)
	assert.Equal(t, st.Accepted, st.Trained+st.Dropped+st.Requeued+st.Drained+st.Held)
}
