package samplerpool

import (
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

var t0 = time.Unix(1_700_000_000, 0)

// backoffStep is constBackoff's interval.
const backoffStep = time.Second

// constBackoff is a deterministic schedule of one second.
func constBackoff() backoff.BackOff { return backoff.NewConstantBackOff(time.Second) }

func newTestCore(n, maxFail, maxOut int) *core {
	names := make([]string, n)
	for i := range names {
		names[i] = string(rune('a' + i))
	}
	return newCore(names, maxFail, maxOut, constBackoff)
}

func ref(v policy.Version) policy.Ref { return policy.Ref{Run: "r", Version: v, URI: "mem://r"} }

// loadAll loads v on every replica of c.
func loadAll(c *core, v policy.Version) {
	for _, i := range c.setTarget(ref(v)) {
		c.loaded(i, ref(v), nil, t0)
	}
}

func mustAcquire(t *testing.T, c *core, tried ...int) int {
	t.Helper()
	i, res := c.acquire(tried)
	require.Equal(t, picked, res)
	return i
}

// release ends a call on replica i begun in its current admission.
func release(c *core, i int, out outcome) bool { return c.release(i, c.admission(i), out, t0) }

func TestCoreRoutesByOutstanding(t *testing.T) {
	t.Parallel()
	c := newTestCore(3, 3, 0)
	loadAll(c, 1)
	// Ties go to the lowest index, so three calls spread over a, b, c.
	assert.Equal(t, 0, mustAcquire(t, c))
	assert.Equal(t, 1, mustAcquire(t, c))
	assert.Equal(t, 2, mustAcquire(t, c))
	assert.Equal(t, 0, mustAcquire(t, c))
	// b finishes: it now has the fewest outstanding.
	c.release(1, c.admission(1), outcomeOK, t0)
	assert.Equal(t, 1, mustAcquire(t, c))
	s := c.stats()
	assert.Equal(t, []int{2, 1, 1}, []int{s.Replicas[0].Outstanding, s.Replicas[1].Outstanding, s.Replicas[2].Outstanding})
	assert.Equal(t, int64(5), s.Calls)
}

func TestCoreMaxOutstanding(t *testing.T) {
	t.Parallel()
	c := newTestCore(2, 3, 1)
	loadAll(c, 1)
	assert.Equal(t, 0, mustAcquire(t, c))
	assert.Equal(t, 1, mustAcquire(t, c))
	_, res := c.acquire(nil)
	assert.Equal(t, pickFull, res)
	c.release(1, c.admission(1), outcomeOK, t0)
	assert.Equal(t, 1, mustAcquire(t, c))
}

func TestCoreEjectsAfterMaxFailures(t *testing.T) {
	t.Parallel()
	c := newTestCore(2, 3, 0)
	loadAll(c, 1)
	for k := range 2 {
		i := mustAcquire(t, c)
		require.Equal(t, 0, i)
		assert.False(t, c.release(i, c.admission(i), outcomeTransient, t0), "failure %d", k+1)
	}
	// A success resets the count; a non-transient error does not count.
	release(c, mustAcquire(t, c), outcomeOK)
	release(c, mustAcquire(t, c), outcomeError)
	release(c, mustAcquire(t, c), outcomeCanceled)
	for k := range 3 {
		i := mustAcquire(t, c)
		require.Equal(t, 0, i)
		assert.Equal(t, k == 2, c.release(i, c.admission(i), outcomeTransient, t0), "failure %d", k+1)
	}
	s := c.stats().Replicas[0]
	assert.False(t, s.Healthy)
	assert.Equal(t, int64(5), s.Failures)
	assert.Equal(t, int64(1), s.Errors)
	assert.Equal(t, int64(1), s.Ejections)
	// Only b is routable now.
	assert.Equal(t, 1, mustAcquire(t, c))
	assert.Equal(t, 1, mustAcquire(t, c))
	v, ok := c.newest()
	assert.True(t, ok)
	assert.Equal(t, policy.Version(1), v)
}

func TestCoreRetryNeverReturnsToFailedReplica(t *testing.T) {
	t.Parallel()
	c := newTestCore(3, 3, 0)
	loadAll(c, 1)
	i := mustAcquire(t, c)
	c.release(i, c.admission(i), outcomeTransient, t0)
	j := mustAcquire(t, c, i)
	assert.NotEqual(t, i, j)
	c.release(j, c.admission(j), outcomeTransient, t0)
	k := mustAcquire(t, c, i, j)
	assert.Equal(t, 2, k)
	c.release(k, c.admission(k), outcomeTransient, t0)
	_, res := c.acquire([]int{i, j, k})
	assert.Equal(t, pickNone, res)
	s := c.stats()
	assert.Equal(t, int64(2), s.Retries)
	assert.Equal(t, int64(1), s.Replicas[0].RetriedAway)
	assert.Equal(t, int64(1), s.Replicas[1].RetriedAway)
}

func TestCorePrefersNewestVersion(t *testing.T) {
	t.Parallel()
	c := newTestCore(3, 3, 0)
	loadAll(c, 1)
	// Version 2 reaches c only; b's load fails.
	c.setTarget(ref(2))
	c.loaded(2, ref(2), nil, t0)
	c.loaded(1, ref(2), errors.New("boom"), t0)
	v, _ := c.newest()
	assert.Equal(t, policy.Version(2), v)
	// c takes the calls even while busier.
	assert.Equal(t, 2, mustAcquire(t, c))
	assert.Equal(t, 2, mustAcquire(t, c))
	// Excluded (this call failed there), the older replicas serve.
	assert.Equal(t, 0, mustAcquire(t, c, 2))
	s := c.stats()
	assert.True(t, s.Replicas[1].Stale)
	assert.False(t, s.Replicas[0].Stale, "a never finished its load: not stale, just behind")
	assert.Equal(t, policy.Version(1), s.Replicas[0].Served)
	// The health loop re-loads b once its back-off is due.
	jobs, next, ok := c.dueWork(t0, nil)
	assert.Empty(t, jobs)
	require.True(t, ok)
	assert.Equal(t, t0.Add(time.Second), next)
	jobs, _, _ = c.dueWork(next, nil)
	require.Len(t, jobs, 1)
	assert.Equal(t, job{i: 1, kind: jobReload, ref: ref(2), hasRef: true}, jobs[0])
	c.reloaded(jobs[0], nil, next)
	assert.False(t, c.stats().Replicas[1].Stale)
	assert.Equal(t, policy.Version(2), c.stats().Replicas[1].Served)
}

func TestCoreReadmitsAfterProbeAndReload(t *testing.T) {
	t.Parallel()
	c := newTestCore(2, 1, 0)
	loadAll(c, 1)
	i := mustAcquire(t, c)
	require.True(t, c.release(i, c.admission(i), outcomeTransient, t0))
	// Nothing due before the back-off.
	jobs, next, ok := c.dueWork(t0, nil)
	assert.Empty(t, jobs)
	require.True(t, ok)
	// The target moves on while a is out.
	for _, k := range c.setTarget(ref(2)) {
		assert.Equal(t, 1, k, "ejected replicas are not part of the fan-out")
		c.loaded(k, ref(2), nil, t0)
	}
	jobs, _, _ = c.dueWork(next, nil)
	require.Len(t, jobs, 1)
	probe := jobs[0]
	assert.Equal(t, job{i: 0, kind: jobProbe, ref: ref(2), hasRef: true}, probe)
	// While the probe runs, it is not handed out again.
	again, _, _ := c.dueWork(next.Add(time.Hour), nil)
	assert.Empty(t, again)
	// A failed probe schedules the next one a back-off later.
	assert.False(t, c.probed(probe, false, errors.New("down"), next))
	jobs, next2, ok := c.dueWork(next, nil)
	assert.Empty(t, jobs)
	require.True(t, ok)
	assert.Equal(t, next.Add(time.Second), next2)
	jobs, _, _ = c.dueWork(next2, nil)
	require.Len(t, jobs, 1)
	assert.True(t, c.probed(jobs[0], true, nil, next2))
	s := c.stats().Replicas[0]
	assert.True(t, s.Healthy)
	assert.Equal(t, policy.Version(2), s.Served)
	assert.Equal(t, int64(1), s.Readmissions)
	assert.Equal(t, int64(1), s.ProbeFailures)
	assert.Equal(t, 0, mustAcquire(t, c), "re-admitted on the newest version, a is preferred again by index")
}

// A call cut off by the failure that ejected its replica may end only
// after the replica came back: its failure is counted but does not eject
// the re-admitted replica; a call begun after the re-admission does.
func TestCoreOldCallDoesNotEjectReadmitted(t *testing.T) {
	t.Parallel()
	c := newTestCore(2, 1, 0)
	loadAll(c, 1)
	first := mustAcquire(t, c)
	sinceFirst := c.admission(first)
	second := mustAcquire(t, c, 1) // another call on a, in flight when the first fails
	require.Equal(t, first, second)
	require.True(t, release(c, first, outcomeTransient))
	jobs, next, ok := c.dueWork(t0, nil)
	require.Empty(t, jobs)
	require.True(t, ok)
	jobs, _, _ = c.dueWork(next, nil)
	require.Len(t, jobs, 1)
	require.True(t, c.probed(jobs[0], true, nil, next))

	assert.False(t, c.release(second, sinceFirst, outcomeTransient, next), "a call of the previous admission")
	s := c.stats().Replicas[first]
	assert.True(t, s.Healthy)
	assert.Equal(t, int64(2), s.Failures, "its failure is still counted")
	assert.Equal(t, first, mustAcquire(t, c), "still routable")
	assert.True(t, release(c, first, outcomeTransient), "a call of this admission ejects")
}

func TestCoreGap(t *testing.T) {
	t.Parallel()
	c := newTestCore(1, 3, 0)
	c.recordGap(0, -0.25)
	c.recordGap(0, 0.75)
	c.recordGap(0, nan())
	s := c.stats().Replicas[0]
	assert.Equal(t, int64(2), s.GapCount)
	assert.InDelta(t, 0.5, s.GapMean, 1e-12)
}

func nan() float64 { z := 0.0; return z / z }
