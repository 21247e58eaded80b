package openai

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func names(as []*adapter) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.name)
	}
	return out
}

func addV(s *versionSet, v int) []string {
	return names(s.add(policy.Version(v), fmt.Sprintf("v%d", v), fmt.Sprintf("/p/%d", v)))
}

func TestVersionSetStepByStep(t *testing.T) {
	t.Parallel()
	s := newVersionSet("base", 2)
	b := s.acquire()
	assert.True(t, b.base)
	assert.Equal(t, policy.Version(0), b.version)
	assert.Empty(t, addV(s, 1))
	assert.Empty(t, names(s.release(b)), "the base is never unloaded")
	assert.Empty(t, addV(s, 2))
	one := s.acquire()
	assert.Equal(t, policy.Version(2), one.version)
	assert.Equal(t, []string{"v1"}, addV(s, 3), "over the bound: the oldest, unused, goes")
	assert.Empty(t, addV(s, 4), "v2 is in use: doomed, kept")
	assert.Equal(t, []policy.Version{2, 3, 4}, s.registered())
	assert.Equal(t, []string{"v3"}, addV(s, 5), "v2 doomed already; the next oldest goes")
	assert.Equal(t, []string{"v2"}, names(s.release(one)))
	assert.Equal(t, []policy.Version{4, 5}, s.registered())
	_, ok := s.lookup(2)
	assert.False(t, ok)
	a, ok := s.lookup(5)
	require.True(t, ok)
	assert.Equal(t, "v5", a.name)
	assert.Panics(t, func() { s.release(one) })
}

// Property: against a naive model, the live (not doomed) set is the newest
// max versions, an acquired version is registered until released, and
// every version is unloaded at most once.
func TestVersionSetAgainstModel(t *testing.T) {
	t.Parallel()
	for max := 1; max <= 4; max++ {
		s := newVersionSet("base", max)
		held := map[*adapter]int{}
		unloaded := map[string]bool{}
		v := 0
		for step := range 400 {
			var gone []*adapter
			switch step % 5 {
			case 0, 3:
				v++
				gone = s.add(policy.Version(v), fmt.Sprintf("v%d", v), "")
			case 1, 4:
				a := s.acquire()
				held[a]++
			case 2:
				for a, n := range held {
					gone = s.release(a)
					if n == 1 {
						delete(held, a)
					} else {
						held[a] = n - 1
					}
					break
				}
			}
			for _, g := range gone {
				require.False(t, unloaded[g.name], "unloaded twice: %s", g.name)
				require.Zero(t, g.refs)
				unloaded[g.name] = true
			}
			for a := range held {
				if !a.base {
					_, ok := s.lookup(a.version)
					require.True(t, ok, "held v%d not registered", a.version)
				}
			}
			live := 0
			for _, a := range s.loaded {
				if !a.doomed {
					live++
					require.Greater(t, a.version, policy.Version(v-max), "live version too old")
				}
			}
			require.LessOrEqual(t, live, max)
		}
	}
}
