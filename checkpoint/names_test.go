package checkpoint

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func nanValue() float64 { return math.NaN() }

func TestNameValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"000017", true},
		{"final", true},
		{"arith-grpo_v1.2", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"../etc", false},
		{"a/../../b", false},
		{"a/b", false},
		{`a\b`, false},
		{`..\..\windows`, false},
		{"/etc/passwd", false},
		{"a\x00b", false},
		{"a b", false},
		{"a:b", false},
		{"%2e%2e", false},
		{"name\n", false},
		{"ünïcode", false},
		{"~root", false},
	}
	s := newStore(t)
	for _, tc := range tests {
		err := ValidName(tc.name)
		assert.Equal(t, tc.ok, err == nil, "ValidName(%q): %v", tc.name, err)
		assert.Equal(t, tc.ok, ValidRun(tc.name) == nil, "ValidRun(%q)", tc.name)
		if !tc.ok {
			assert.ErrorIs(t, err, ErrBadName)
			for _, call := range []func() error{
				func() error { _, err := s.Dir(tc.name, policy.State, "x"); return err },
				func() error { _, err := s.Dir("r", policy.State, tc.name); return err },
				func() error { _, err := s.Get("r", policy.SamplerWeights, tc.name); return err },
				func() error { return s.Delete(tc.name, policy.SamplerWeights, "x") },
				func() error { _, err := s.List(tc.name); return err },
			} {
				assert.ErrorIs(t, call(), ErrBadName, "%q", tc.name)
			}
		}
	}
}

func TestKindValidation(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidKind(policy.SamplerWeights))
	require.NoError(t, ValidKind(policy.State))
	for _, k := range []policy.Kind{"", "optimizer", "..", "weights/..", "Weights"} {
		err := ValidKind(k)
		assert.ErrorIs(t, err, ErrBadName, "%q", k)
		assert.ErrorContains(t, err, `want "sampler_weights" or "weights"`)
	}
}
