package buffer

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// model is the naive reference buffer: held groups in arrival order, sorted
// (stably, by admitted version) whenever the learner looks at them.
type model struct {
	k, n int
	held []rl.Group
}

func (m *model) sorted() []rl.Group {
	s := slices.Clone(m.held)
	slices.SortStableFunc(s, func(a, b rl.Group) int { return int(a.Admitted - b.Admitted) })
	return s
}

func (m *model) expire(step policy.Version) []uint64 {
	bound := step - policy.Version(m.k)
	out := []uint64{}
	for _, g := range m.sorted() {
		if g.Version < bound {
			out = append(out, g.ID)
		}
	}
	m.held = slices.DeleteFunc(m.held, func(g rl.Group) bool { return g.Version < bound })
	return out
}

func (m *model) take() []uint64 {
	out := []uint64{}
	for _, g := range m.sorted()[:m.n] {
		out = append(out, g.ID)
	}
	m.held = slices.DeleteFunc(m.held, func(g rl.Group) bool { return slices.Contains(out, g.ID) })
	return out
}

// TestCoreMatchesModel drives Core with random completions (rollouts end in
// any order, groups sampled by any version since their admission) and
// compares every Expire, Take and Drain with the naive model.
func TestCoreMatchesModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		k, n := rng.IntN(3), 1+rng.IntN(4)
		pol := []rl.StalePolicy{rl.Pace, rl.Drop, rl.Requeue}[rng.IntN(3)]
		c, err := NewCore(Config{GroupsPerBatch: n, MaxStaleness: k, Policy: pol, Limit: n * (k + 2)})
		require.NoError(t, err)
		m := &model{k: k, n: n}
		var step, served policy.Version
		c.Serve(0)
		var running []policy.Version
		for range 300 {
			switch r := rng.IntN(10); {
			case r < 4:
				if v, ok := c.Admit(); ok {
					running = append(running, v)
				}
			case r < 8 && len(running) > 0 && c.CanPut():
				i := rng.IntN(len(running))
				adm := running[i]
				running = slices.Delete(running, i, i+1)
				g := rl.Group{Admitted: adm, Version: adm + policy.Version(rng.IntN(int(served-adm)+1))}
				g.ID = uint64(c.Stats().Accepted)
				if !c.Put(g) {
					m.held = append(m.held, g)
				}
			default:
				require.Equal(t, m.expire(step), ids(c.Expire(step, nil)), "seed %d: expire at %d", seed, step)
				if c.CanTake() {
					require.Equal(t, m.take(), ids(c.Take(nil)), "seed %d: take at %d", seed, step)
					step++
					if rng.IntN(2) == 0 {
						served = step
						c.Serve(served)
					}
				}
			}
			require.Equal(t, len(m.held), c.Len(), "seed %d", seed)
		}
		want := []uint64{}
		for _, g := range m.sorted() {
			want = append(want, g.ID)
		}
		require.Equal(t, want, ids(c.Drain(nil)), "seed %d: drain", seed)
	}
}
