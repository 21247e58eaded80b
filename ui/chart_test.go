package ui

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tick properties, checked on random ranges: inside the range, evenly
// spaced by 1, 2, 2.5 or 5 times a power of ten, three to six of them, and
// labels that tell neighbours apart (for ranges wider than a millionth of
// their values).
func TestTicksAreRound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		lo := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(10)-4))
		hi := lo + rng.Float64()*math.Pow(10, float64(rng.IntN(10)-4)) + 1e-9
		if hi-lo < 1e-6*math.Max(math.Abs(lo), math.Abs(hi)) {
			continue // beyond float64's resolution for any axis
		}
		ts, d := ticks(lo, hi)
		require.GreaterOrEqual(t, len(ts), 2, "%g..%g", lo, hi)
		require.LessOrEqual(t, len(ts), 6, "%g..%g", lo, hi)
		step := ts[1] - ts[0]
		exp := math.Floor(math.Log10(step))
		m := step / math.Pow(10, exp)
		assert.True(t, near(m, 1) || near(m, 2) || near(m, 2.5) || near(m, 5) || near(m, 10), "step %g of %g..%g", step, lo, hi)
		for i, v := range ts {
			assert.True(t, v >= lo-step*1e-6 && v <= hi+step*1e-6, "tick %g outside %g..%g", v, lo, hi)
			if i > 0 {
				assert.InDelta(t, step, v-ts[i-1], step*1e-6)
				if math.Abs(v) < 1e6 {
					assert.NotEqual(t, tickLabel(ts[i-1], d), tickLabel(v, d), "labels of %g and %g", ts[i-1], v)
				}
				if near(step, math.Round(step)) && step >= 1 {
					assert.Zero(t, d, "whole steps of %g need no decimals", step)
				}
			}
		}
	}
	assert.Equal(t, "0", tickLabel(math.Copysign(0, -1), 0), "no -0")
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
