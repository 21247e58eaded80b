package staleness

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"ok", Config{GroupsPerBatch: 4}, ""},
		{"negative staleness", Config{GroupsPerBatch: 4, MaxStaleness: -1}, "MaxStaleness is -1"},
		{"no batch", Config{}, "GroupsPerBatch is 0"},
		{"limit below batch", Config{GroupsPerBatch: 4, Limit: 3}, "Limit is 3"},
		{"versions per step", Config{GroupsPerBatch: 4, VersionsPerStep: -2}, "VersionsPerStep is -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewCore(tt.cfg)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func admitAll(c *Core) []policy.Version {
	var vs []policy.Version
	for {
		v, ok := c.Admit()
		if !ok {
			return vs
		}
		vs = append(vs, v)
	}
}

// TestPaceTranscript walks the gate through a k = 1, two-groups-per-batch
// run step by step; every number follows from the window formula
// (k + s + 1) × B and the deadline rule.
func TestPaceTranscript(t *testing.T) {
	t.Parallel()
	const k, b = 1, 2
	c, err := NewCore(Config{MaxStaleness: k, GroupsPerBatch: b, Pace: true})
	require.NoError(t, err)
	assert.Empty(t, admitAll(c), "nothing before the sampler serves a version")

	c.Serve(0)
	got := admitAll(c)
	require.Len(t, got, (k+0+1)*b, "window at s=0")
	assert.Equal(t, int64(k), c.Deadline(0))

	// Two of four finish; step 0 may take them: the other two (deadline 1)
	// still fit in step 1.
	c.Finish(0, true)
	assert.False(t, c.CanTake(), "one ready group is not a batch")
	c.Finish(0, true)
	require.True(t, c.CanTake())
	c.Take()
	assert.Empty(t, admitAll(c), "window still (k+0+1)·B while the sampler serves 0")

	c.Serve(1)
	got = admitAll(c)
	assert.Equal(t, []policy.Version{1, 1}, got, "window grows by B per served version")

	// Step 1: the two version-0 rollouts are due now. Even when both new
	// version-1 rollouts are ready first, the learner must wait.
	c.Finish(1, true)
	c.Finish(1, true)
	assert.False(t, c.CanTake(), "a batch of version-1 groups would leave the due version-0 rollouts behind")
	c.Finish(0, true)
	assert.False(t, c.CanTake())
	c.Finish(0, false) // one fails: its place is free, nothing is due any more
	assert.True(t, c.CanTake(), "the ready version-0 group goes first, then a version-1 group")
	c.Take()
	st := c.Stats()
	assert.Equal(t, int64(6), st.Admitted)
	assert.Equal(t, int64(1), st.Failed)
	assert.Equal(t, int64(4), st.Trained)
	assert.Equal(t, int64(1), c.Untrained())
}

func TestLagRuleWithoutPace(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{MaxStaleness: 1, GroupsPerBatch: 1})
	require.NoError(t, err)
	c.Serve(0)
	for i := range 3 {
		_, ok := c.Admit()
		require.True(t, ok, "no pacing at k ≥ 1: admission %d is bounded by workers and the buffer, not by a window", i)
	}
	c.Finish(0, true)
	c.Take()
	c.Finish(0, true)
	c.Take()
	_, ok := c.Admit()
	assert.False(t, ok, "the learner is 2 versions ahead of the served 0: nothing starts until the sampler catches up")
	c.Serve(1)
	_, ok = c.Admit()
	assert.True(t, ok)
}

func TestSynchronousWithoutPaceAdmitsOneBatchPerVersion(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{MaxStaleness: 0, GroupsPerBatch: 2})
	require.NoError(t, err)
	c.Serve(0)
	for range 2 {
		_, ok := c.Admit()
		require.True(t, ok)
	}
	_, ok := c.Admit()
	require.False(t, ok, "k = 0: one batch per version, nothing that could only expire")
	c.Finish(0, true)
	c.Finish(0, true)
	require.True(t, c.CanTake())
	c.Take()
	_, ok = c.Admit()
	assert.False(t, ok, "k = 0: after a batch is taken nothing starts until the sampler serves the new version")
	c.Serve(1)
	_, ok = c.Admit()
	assert.True(t, ok)
}

func TestFinishUnknownPanics(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{GroupsPerBatch: 1})
	require.NoError(t, err)
	assert.Panics(t, func() { c.Finish(3, true) })
}

func TestCancelNotRunningPanics(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{GroupsPerBatch: 2})
	require.NoError(t, err)
	assert.Panics(t, func() { c.Cancel(0) }, "nothing admitted")
	c.Serve(0)
	v, ok := c.Admit()
	require.True(t, ok)
	c.Finish(v, true)
	assert.Panics(t, func() { c.Cancel(v) }, "the rollout admitted at %d has finished", v)
}

// TestCancelUndoesAdmit drives two cores with the same random operations,
// except that the first also admits ghost rollouts and cancels them later,
// in any order, with other rollouts admitted and finishing, batches taken
// and the sampler moving on in between. Whenever no ghost is pending the two
// cores are the same — counts, places, buckets, what they admit and take —
// but for Peak, which the ghosts may have raised.
func TestCancelUndoesAdmit(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 11))
		k, b := rng.IntN(3), 1+rng.IntN(3)
		cfg := Config{MaxStaleness: k, GroupsPerBatch: b, Pace: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			cfg.Limit = b + rng.IntN(b*(k+1))
		}
		ghost, err := NewCore(cfg)
		require.NoError(t, err)
		twin, err := NewCore(cfg)
		require.NoError(t, err)
		var served policy.Version
		ghost.Serve(served)
		twin.Serve(served)
		var running, ghosts []policy.Version
		cancels := 0
		for range 400 {
			switch rng.IntN(6) {
			case 0: // a rollout both admit (the ghosts may hold the place)
				if len(ghosts) == 0 {
					require.Equal(t, twin.CanAdmit(), ghost.CanAdmit(), "seed %d", seed)
				}
				if !ghost.CanAdmit() || !twin.CanAdmit() {
					continue
				}
				vg, _ := ghost.Admit()
				vt, _ := twin.Admit()
				require.Equal(t, vt, vg, "seed %d", seed)
				running = append(running, vt)
			case 1: // a ghost: admitted, its caller gone
				if v, ok := ghost.Admit(); ok {
					ghosts = append(ghosts, v)
				}
			case 2:
				if len(ghosts) == 0 {
					continue
				}
				i := rng.IntN(len(ghosts))
				ghost.Cancel(ghosts[i])
				ghosts = slices.Delete(ghosts, i, i+1)
				cancels++
			case 3: // a rollout both admitted ends
				if len(running) == 0 {
					continue
				}
				i := rng.IntN(len(running))
				ok := rng.IntN(4) > 0
				ghost.Finish(running[i], ok)
				twin.Finish(running[i], ok)
				running = slices.Delete(running, i, i+1)
			case 4:
				served += policy.Version(rng.IntN(2))
				ghost.Serve(served)
				twin.Serve(served)
			default: // the learner
				if len(ghosts) == 0 {
					require.Equal(t, twin.CanTake(), ghost.CanTake(), "seed %d", seed)
				}
				if ghost.CanTake() && twin.CanTake() {
					ghost.Take()
					twin.Take()
				}
			}
			if len(ghosts) == 0 {
				requireSame(t, twin, ghost, seed)
			}
		}
		for _, v := range ghosts {
			ghost.Cancel(v)
			cancels++
		}
		requireSame(t, twin, ghost, seed)
		require.Positive(t, cancels, "seed %d: some ghost was cancelled", seed)
	}
}

// requireSame checks that got is in want's state, Peak aside (got's may be
// higher).
func requireSame(t *testing.T, want, got *Core, seed uint64) {
	t.Helper()
	ws, gs := want.Stats(), got.Stats()
	require.GreaterOrEqual(t, gs.Peak, ws.Peak, "seed %d", seed)
	gs.Peak = ws.Peak
	require.Equal(t, ws, gs, "seed %d", seed)
	require.True(t, slices.Equal(want.buckets, got.buckets), "seed %d: buckets %v, want %v", seed, got.buckets, want.buckets)
	require.Equal(t, want.Untrained(), got.Untrained(), "seed %d", seed)
	require.Equal(t, want.Ready(), got.Ready(), "seed %d", seed)
	require.Equal(t, want.Running(), got.Running(), "seed %d", seed)
	require.Equal(t, want.CanAdmit(), got.CanAdmit(), "seed %d", seed)
	require.Equal(t, want.CanTake(), got.CanTake(), "seed %d", seed)
}

type simGroup struct {
	id       int
	admitted policy.Version
	version  policy.Version
}

// TestPaceProperty drives the core with random interleavings of
// admissions, completions (in any order, some failing), weight-sync lag and
// learner steps that take the B oldest-admitted groups once nothing due is
// running. Over many seeds: no trained group is older than k versions
// (staleness measured at the batch's first sub-step), with k = 0 every
// group is fresh, and no group is ever left over-stale.
func TestPaceProperty(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		k := rng.IntN(4)
		b := 1 + rng.IntN(4)
		s := 1 + rng.IntN(2)
		start := policy.Version(rng.IntN(3))
		cfg := Config{MaxStaleness: k, GroupsPerBatch: b, Pace: true, VersionsPerStep: s, Start: start}
		if rng.IntN(2) == 0 {
			cfg.Limit = b + rng.IntN(b*(k+1))
		}
		c, err := NewCore(cfg)
		require.NoError(t, err)
		learner := start
		published := start
		c.Serve(start)
		var running, ready []simGroup
		id, steps := 0, 0
		for iter := 0; iter < 4000 && steps < 40; iter++ {
			switch rng.IntN(5) {
			case 0: // admit a few
				for range rng.IntN(4) {
					v, ok := c.Admit()
					if !ok {
						break
					}
					served, _ := c.Served()
					require.Equal(t, served, v)
					running = append(running, simGroup{id: id, admitted: v})
					id++
				}
			case 1: // a random rollout ends; the sampler may have moved on
				if len(running) == 0 {
					continue
				}
				i := rng.IntN(len(running))
				g := running[i]
				running = slices.Delete(running, i, i+1)
				served, _ := c.Served()
				g.version = g.admitted + policy.Version(rng.IntN(int(served-g.admitted)+1))
				ok := rng.IntN(10) > 0
				c.Finish(g.admitted, ok)
				if ok {
					ready = append(ready, g)
				}
			case 2: // weight sync catches up (possibly partially)
				served, _ := c.Served()
				if published > served {
					c.Serve(served + policy.Version(1+rng.IntN(int(published-served))))
				}
			default: // learner step
				if !c.CanTake() {
					continue
				}
				slices.SortStableFunc(ready, func(x, y simGroup) int {
					if x.admitted != y.admitted {
						return int(x.admitted - y.admitted)
					}
					return int(x.version - y.version)
				})
				for _, g := range ready[:b] {
					st := policy.Staleness(learner, g.version)
					require.LessOrEqual(t, st, int64(k), "seed %d: group %d v%d trained at %d (k=%d)", seed, g.id, g.version, learner, k)
					if k == 0 {
						require.Zero(t, st)
					}
				}
				ready = slices.Delete(ready, 0, b)
				c.Take()
				learner += policy.Version(s)
				published = learner
				steps++
				// Nothing left behind has passed its deadline.
				for _, g := range append(slices.Clone(ready), running...) {
					require.GreaterOrEqual(t, c.Deadline(g.admitted), int64(steps),
						"seed %d: group %d admitted at %d left behind at step %d", seed, g.id, g.admitted, steps)
				}
				require.LessOrEqual(t, c.Untrained(), int64(c.Config().Limit))
			}
		}
		require.Greater(t, steps, 3, "seed %d: the pipeline made progress", seed)
	}
}

// TakeRest takes every ready group as one short batch, and nothing (no
// step) when none is ready.
func TestTakeRest(t *testing.T) {
	t.Parallel()
	c, err := NewCore(Config{MaxStaleness: 1, GroupsPerBatch: 4})
	require.NoError(t, err)
	c.Serve(0)
	assert.Zero(t, c.TakeRest())
	assert.Zero(t, c.Stats().Steps)
	for range 3 {
		v, ok := c.Admit()
		require.True(t, ok)
		c.Finish(v, true)
	}
	v, ok := c.Admit()
	require.True(t, ok)
	require.False(t, c.CanTake(), "3 of 4 ready")
	assert.Equal(t, int64(3), c.TakeRest())
	st := c.Stats()
	assert.Equal(t, int64(3), st.Trained)
	assert.Equal(t, int64(1), st.Steps)
	assert.Zero(t, c.Ready())
	assert.Equal(t, int64(1), c.Untrained(), "the running rollout is still untrained")
	c.Finish(v, false)
	assert.Zero(t, c.Untrained())
}
