package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tandemrl/tandem/engine/kernels"
)

// TestMedianOf: the median of the rounds' fractions, odd and even counts,
// in any order, and none.
func TestMedianOf(t *testing.T) {
	frac := func(r decodeRound) float64 { return r.BF16 / r.Bandwidth }
	rounds := []decodeRound{{Bandwidth: 40, BF16: 36}, {Bandwidth: 50, BF16: 35}, {Bandwidth: 30, BF16: 27}}
	assert.InDelta(t, 0.9, medianOf(rounds, frac), 1e-12) // 0.9, 0.7, 0.9
	rounds = append(rounds, decodeRound{Bandwidth: 20, BF16: 10})
	assert.InDelta(t, 0.8, medianOf(rounds, frac), 1e-12) // 0.5, 0.7, 0.9, 0.9
	assert.Zero(t, medianOf(nil, frac))
}

// TestTimeLoop runs timeLoopClock on a clock that only f moves: one
// warm-up call, then calls until d has passed, the total and the fastest
// call read from that clock.
func TestTimeLoop(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	steps := []time.Duration{7, 3, 2, 4, 1, 9} // ms: the warm-up, then the timed calls
	calls := 0
	f := func() {
		clock = clock.Add(steps[calls] * time.Millisecond)
		calls++
	}
	total, n, best := timeLoopClock(now, 9*time.Millisecond, f)
	assert.Equal(t, 4, calls, "the warm-up, then calls until 9 ms have passed (3+2+4)")
	assert.Equal(t, 3, n)
	assert.Equal(t, 9*time.Millisecond, total)
	assert.Equal(t, 2*time.Millisecond, best, "the fastest timed call, not the warm-up")

	calls = 0
	steps = []time.Duration{1, 20}
	total, n, best = timeLoopClock(now, 0, f)
	assert.Equal(t, 1, n, "at least one timed call even when d is 0")
	assert.Equal(t, 20*time.Millisecond, total)
	assert.Equal(t, 20*time.Millisecond, best)
}

// TestMeasureLora runs every LoRA product once per round (a zero
// duration: one warm-up and one timed call each) with each shape's
// operands, which must fit the product's dimensions and leading
// dimensions (Sgemm panics otherwise), and reports a rate for each.
func TestMeasureLora(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the six products eight times each")
	}
	par := kernels.Par{Threads: 1}
	for _, s := range loraShapes {
		r := measureLora(par, s, 0, nil)
		assert.Equal(t, s.Name, r.Shape)
		assert.Positive(t, r.F32, s.Name)
		assert.GreaterOrEqual(t, r.Fastest.F32, r.F32, "%s: the fastest call is at least the mean rate", s.Name)
		assert.Zero(t, r.Numpy, "no numpy process")
	}
}
