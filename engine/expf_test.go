package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpfAgainstMathExp(t *testing.T) {
	t.Parallel()
	worst := 0.0
	for x := -87.0; x <= 88.5; x += 0.0137 {
		xf := float32(x)
		want := math.Exp(float64(xf))
		got := float64(expf(xf))
		rel := math.Abs(got-want) / want
		worst = math.Max(worst, rel)
	}
	t.Logf("max relative error %.3g (float32 ulp is %.3g)", worst, math.Pow(2, -23))
	assert.Less(t, worst, 2.5e-7)
	assert.True(t, math.IsInf(float64(expf(100)), 1))
	assert.Zero(t, expf(-100))
	assert.True(t, math.IsNaN(float64(expf(float32(math.NaN())))))
	require.Equal(t, float32(1), expf(0))
}
