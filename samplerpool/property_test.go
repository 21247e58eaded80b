package samplerpool

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

// model is the naive reference: the rules of the package comment written
// the slow, obvious way.
type model struct {
	ejected []bool
	served  []int64 // -1: never loaded
	out     []int
	consec  []int
	adm     []int64 // re-admissions so far
	maxFail int
	maxOut  int
	target  int64
}

func newModel(n, maxFail, maxOut int) *model {
	m := &model{ejected: make([]bool, n), served: make([]int64, n), out: make([]int, n), consec: make([]int, n),
		adm: make([]int64, n), maxFail: maxFail, maxOut: maxOut, target: -1}
	for i := range m.served {
		m.served[i] = -1
	}
	return m
}

// choose sorts the candidates by (served desc, outstanding asc, index asc)
// and takes the first.
func (m *model) choose(tried []int) (int, pickResult) {
	var cands []int
	full := false
	for i := range m.ejected {
		switch {
		case m.ejected[i] || slices.Contains(tried, i):
		case m.maxOut > 0 && m.out[i] >= m.maxOut:
			full = true
		default:
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		if full {
			return -1, pickFull
		}
		return -1, pickNone
	}
	sort.SliceStable(cands, func(a, b int) bool {
		x, y := cands[a], cands[b]
		if m.served[x] != m.served[y] {
			return m.served[x] > m.served[y]
		}
		return m.out[x] < m.out[y]
	})
	return cands[0], picked
}

func TestCoreMatchesReferenceModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 17))
		n := 1 + rng.IntN(6)
		maxFail := 1 + rng.IntN(3)
		maxOut := rng.IntN(3)
		c := newTestCore(n, maxFail, maxOut)
		m := newModel(n, maxFail, maxOut)
		type call struct {
			i     int
			since int64 // the admission it began in
		}
		var inflight []call
		now := t0
		for step := range 300 {
			now = now.Add(time.Second)
			switch op := rng.IntN(10); {
			case op < 4: // Sample: a first try, or a retry after failures elsewhere
				var tried []int
				for i := range n {
					if rng.IntN(4) == 0 {
						tried = append(tried, i)
					}
				}
				wi, wres := m.choose(tried)
				gi, gres := c.acquire(tried)
				require.Equal(t, wres, gres, "seed %d step %d: pick result", seed, step)
				require.Equal(t, wi, gi, "seed %d step %d: replica", seed, step)
				if gres == picked {
					m.out[gi]++
					inflight = append(inflight, call{gi, m.adm[gi]})
				}
			case op < 7 && len(inflight) > 0: // a call ends: ok, transient, other, cancelled
				k := rng.IntN(len(inflight))
				i, since := inflight[k].i, inflight[k].since
				inflight = slices.Delete(inflight, k, k+1)
				out := outcome(rng.IntN(4))
				m.out[i]--
				wantEject := false
				switch out {
				case outcomeOK:
					m.consec[i] = 0
				case outcomeTransient:
					if since != m.adm[i] {
						break // begun before the latest re-admission
					}
					m.consec[i]++
					if !m.ejected[i] && m.consec[i] >= maxFail {
						m.ejected[i], wantEject = true, true
					}
				}
				require.Equal(t, wantEject, c.release(i, since, out, now), "seed %d step %d: ejection", seed, step)
			case op < 8: // Load of the next version; some replicas fail it
				m.target++
				v := policy.Version(m.target)
				for _, i := range c.setTarget(ref(v)) {
					require.False(t, m.ejected[i])
					var err error
					if rng.IntN(3) == 0 {
						err = errors.New("load failed")
					} else if m.served[i] < m.target {
						m.served[i] = m.target
					}
					c.loaded(i, ref(v), err, now)
				}
			default: // the health loop's due work; each job succeeds or fails
				jobs, _, _ := c.dueWork(now.Add(time.Hour), nil)
				for _, j := range jobs {
					ok := rng.IntN(2) == 0
					var err error
					if !ok {
						err = errors.New("still down")
					}
					switch j.kind {
					case jobProbe:
						require.True(t, m.ejected[j.i])
						if ok {
							m.ejected[j.i], m.consec[j.i] = false, 0
							m.adm[j.i]++
							if j.hasRef && m.served[j.i] < int64(j.ref.Version) {
								m.served[j.i] = int64(j.ref.Version)
							}
						}
						c.probed(j, ok && j.hasRef, err, now)
					case jobReload:
						if ok && m.served[j.i] < int64(j.ref.Version) {
							m.served[j.i] = int64(j.ref.Version)
						}
						c.reloaded(j, err, now)
					}
				}
			}
			s := c.stats()
			for i, r := range s.Replicas {
				require.Equal(t, !m.ejected[i], r.Healthy, "seed %d step %d: replica %d health", seed, step, i)
				require.Equal(t, m.out[i], r.Outstanding, "seed %d step %d: replica %d outstanding", seed, step, i)
				if m.served[i] >= 0 {
					require.Equal(t, policy.Version(m.served[i]), r.Served, "seed %d step %d: replica %d version", seed, step, i)
				} else {
					require.False(t, r.HasServed)
				}
				if r.Stale {
					require.Less(t, m.served[i], m.target, "a stale replica is behind the target")
				}
			}
		}
	}
}
