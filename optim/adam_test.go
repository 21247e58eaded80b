package optim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdamDefaults(t *testing.T) {
	t.Parallel()
	d := AdamParams{}.WithDefaults()
	assert.Equal(t, AdamParams{LearningRate: DefaultLearningRate, Beta1: DefaultBeta1, Beta2: DefaultBeta2, Eps: DefaultEps}, d)
	// Set fields are kept.
	p := AdamParams{LearningRate: 3e-3, Beta1: 0.5, Beta2: 0.6, Eps: 1e-8, WeightDecay: 0.1, GradClipNorm: 2}
	assert.Equal(t, p, p.WithDefaults())
	require.NoError(t, AdamParams{}.Validate())
	require.NoError(t, p.Validate())
}

func TestAdamValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    AdamParams
		want string
	}{
		{AdamParams{LearningRate: -1}, "learning_rate -1 must be a positive"},
		{AdamParams{LearningRate: math.Inf(1)}, "learning_rate +Inf"},
		{AdamParams{LearningRate: math.NaN()}, "learning_rate NaN"},
		{AdamParams{Beta1: 1}, "beta1 1 must be in [0, 1)"},
		{AdamParams{Beta2: -0.1}, "beta2 -0.1 must be in [0, 1)"},
		{AdamParams{Eps: -1}, "eps -1"},
		{AdamParams{WeightDecay: -1}, "weight_decay -1"},
		{AdamParams{GradClipNorm: math.Inf(1)}, "grad_clip_norm +Inf"},
	} {
		err := tc.p.Validate()
		require.ErrorIs(t, err, ErrInvalid, "%+v", tc.p)
		assert.Contains(t, err.Error(), tc.want)
	}
}
