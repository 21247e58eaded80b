package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestTimeLoop: the fastest call is one of the calls timed, so it is no
// slower than their mean, and each call lasts at least what f waits for.
func TestTimeLoop(t *testing.T) {
	calls := 0
	f := func() {
		calls++
		for start := time.Now(); time.Since(start) < time.Millisecond; {
		}
	}
	total, n, best := timeLoop(5*time.Millisecond, f)
	assert.Equal(t, n+1, calls, "one warm-up call, then the timed ones")
	assert.GreaterOrEqual(t, n, 1)
	assert.GreaterOrEqual(t, best, time.Millisecond)
	assert.LessOrEqual(t, best, total/time.Duration(n))
	assert.GreaterOrEqual(t, total, 5*time.Millisecond)
}
