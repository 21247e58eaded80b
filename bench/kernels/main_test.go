package main

import (
	"testing"

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
