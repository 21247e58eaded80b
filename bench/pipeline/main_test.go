package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// TestRunShapes keeps the benchmark's runs working at a tiny scale.
func TestRunShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, k := range []int{0, 1} {
		cfg := rl.Config{GroupsPerBatch: 4, GroupSize: 2, Steps: 3, MaxStaleness: k, Watchdog: time.Hour}
		rep, maxSt, err := run(ctx, cfg, time.Millisecond, time.Millisecond, 2, false)
		require.NoError(t, err)
		assert.Equal(t, 3, rep.Steps)
		assert.LessOrEqual(t, maxSt, k)
	}
	rep, err := runConcurrent(ctx, rl.Config{GroupsPerBatch: 200, GroupSize: 1, Steps: 1, Workers: 200, Watchdog: time.Hour}, 200, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(200), rep.PeakInFlight, "the barrier holds every rollout in flight at once")
}

// The pool part at a tiny scale: every call served, utilisation a share,
// the static assignment's computed on the same draws.
func TestPoolSmoke(t *testing.T) {
	t.Parallel()
	lv, err := runPool(context.Background(), 3, 12, 100*time.Microsecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	if lv.Calls != 12 || lv.Replicas != 3 {
		t.Fatalf("level %+v", lv)
	}
	if !(lv.Utilisation > 0 && lv.Utilisation <= 1.05) || !(lv.StaticUtilisation > 0 && lv.StaticUtilisation <= 1) {
		t.Fatalf("utilisations out of range: %+v", lv)
	}
	if lv.IdealPerSecond <= 0 || lv.CallsPerSecond <= 0 {
		t.Fatalf("rates: %+v", lv)
	}
}
