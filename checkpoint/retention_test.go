package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func fakeCheckpoint(kind policy.Kind, v policy.Version, name string) Checkpoint {
	return Checkpoint{Manifest: Manifest{Meta: Meta{Run: "r", Kind: kind, Version: v, Name: name}}}
}

// naivePrune is the reference: a checkpoint goes if its kind matches, at
// least keep distinct newer-or-equal versions of that kind exist above it
// (it is not among the newest keep), and its version is not in use.
func naivePrune(cks []Checkpoint, kind policy.Kind, keep int, inUse map[policy.Version]bool) map[string]bool {
	out := map[string]bool{}
	for _, c := range cks {
		if c.Kind != kind || inUse[c.Version] {
			continue
		}
		newer := map[policy.Version]bool{}
		for _, d := range cks {
			if d.Kind == kind && d.Version > c.Version {
				newer[d.Version] = true
			}
		}
		if len(newer) >= keep {
			out[c.Name] = true
		}
	}
	return out
}

func TestPrunePlanMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		var cks []Checkpoint
		for i := range rng.IntN(12) {
			kind := policy.SamplerWeights
			if rng.IntN(4) == 0 {
				kind = policy.State
			}
			cks = append(cks, fakeCheckpoint(kind, policy.Version(rng.IntN(8)), fmt.Sprintf("c%02d", i)))
		}
		inUse := map[policy.Version]bool{}
		for range rng.IntN(3) {
			inUse[policy.Version(rng.IntN(8))] = true
		}
		keep := 1 + rng.IntN(4)
		doomed, err := PrunePlan(cks, policy.SamplerWeights, keep, inUse)
		require.NoError(t, err)
		got := map[string]bool{}
		for _, c := range doomed {
			got[c.Name] = true
			require.False(t, inUse[c.Version], "trial %d: deleted in-use version %d", trial, c.Version)
			require.Equal(t, policy.SamplerWeights, c.Kind)
		}
		require.Equal(t, naivePrune(cks, policy.SamplerWeights, keep, inUse), got, "trial %d", trial)
		require.True(t, slices.IsSortedFunc(doomed, func(a, b Checkpoint) int { return int(a.Version - b.Version) }))
	}
}

func TestPrunePlanCases(t *testing.T) {
	t.Parallel()
	sw := func(vs ...policy.Version) []Checkpoint {
		var out []Checkpoint
		for _, v := range vs {
			out = append(out, fakeCheckpoint(policy.SamplerWeights, v, fmt.Sprintf("v%d", v)))
		}
		return out
	}
	tests := []struct {
		name  string
		cks   []Checkpoint
		keep  int
		inUse map[policy.Version]bool
		want  []string
	}{
		{"nothing to prune", sw(1, 2), 2, nil, nil},
		{"keep newest two", sw(1, 2, 3, 4), 2, nil, []string{"v1", "v2"}},
		{"in-use old version stays", sw(1, 2, 3, 4), 2, map[policy.Version]bool{1: true}, []string{"v2"}},
		{"all old versions in use", sw(1, 2, 3, 4), 1, map[policy.Version]bool{1: true, 2: true, 3: true}, nil},
		{"unordered input", sw(4, 1, 3, 2), 3, nil, []string{"v1"}},
		{"state never touched", append(sw(5, 6), fakeCheckpoint(policy.State, 1, "s1")), 1, nil, []string{"v5"}},
	}
	for _, tc := range tests {
		doomed, err := PrunePlan(tc.cks, policy.SamplerWeights, tc.keep, tc.inUse)
		require.NoError(t, err, tc.name)
		var names []string
		for _, c := range doomed {
			names = append(names, c.Name)
		}
		assert.Equal(t, tc.want, names, tc.name)
	}
	_, err := PrunePlan(sw(1), policy.SamplerWeights, 0, nil)
	assert.ErrorContains(t, err, "keep 0: want at least 1")
}

func TestStorePrune(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for v := range policy.Version(6) {
		mustSave(t, s, meta("r", policy.SamplerWeights, fmt.Sprintf("%06d", v), v), byte(v))
	}
	mustSave(t, s, meta("r", policy.State, "state-0", 0), 7)
	// A sampler still serves version 1 to in-flight rollouts: keep it.
	deleted, err := s.Prune("r", policy.SamplerWeights, 2, map[policy.Version]bool{1: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"tinker://r/sampler_weights/000000", "tinker://r/sampler_weights/000002",
		"tinker://r/sampler_weights/000003"}, ids(deleted))
	left, err := s.List("r")
	require.NoError(t, err)
	assert.Equal(t, []string{"tinker://r/weights/state-0", "tinker://r/sampler_weights/000001",
		"tinker://r/sampler_weights/000004", "tinker://r/sampler_weights/000005"}, ids(left))
	_, err = s.Prune("r", "junk", 2, nil)
	assert.ErrorIs(t, err, ErrBadName)
}
