package samplerpool

import (
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tandemrl/tandem/policy"
)

// outcome is how one call on a replica ended.
type outcome int

const (
	outcomeOK        outcome = iota
	outcomeTransient         // counts against the replica
	outcomeError             // non-transient: the request's fault, not the replica's
	outcomeCanceled          // the caller gave up: counts nowhere
)

// pickResult says why acquire did or did not choose a replica.
type pickResult int

const (
	picked   pickResult = iota
	pickFull            // routable replicas exist but all are at MaxOutstanding
	pickNone            // no replica is routable for this call
)

// jobKind is the health loop's work on one replica.
type jobKind int

const (
	jobProbe  jobKind = iota + 1 // ejected: check, re-load, re-admit
	jobReload                    // healthy but stale: re-load the target
)

// job is one unit of health-loop work handed out by dueWork.
type job struct {
	i      int
	kind   jobKind
	ref    policy.Ref
	hasRef bool
}

// replicaState is the core's view of one replica.
type replicaState struct {
	name      string
	ejected   bool
	stale     bool // its last Load of the target failed
	busy      bool // a probe or re-load is in flight
	parked    bool // the back-off schedule stopped
	due       time.Time
	bo        backoff.BackOff
	served    policy.Version
	hasServed bool

	outstanding int
	consec      int // consecutive transient failures

	calls, failures, errors, movedAway int64
	ejections, readmissions            int64
	probeFailures, loadFailures        int64
	gapSum                             float64
	gapN                               int64
}

// rank is the version preference key: higher is preferred; a replica that
// never loaded ranks below every loaded one.
func (r *replicaState) rank() int64 {
	if !r.hasServed {
		return -1
	}
	return int64(r.served)
}

// core holds the pool's routing and health state. It does no I/O, starts
// no goroutines and reads no clock: time comes in as arguments. It is not
// safe for concurrent use; Pool guards it with a mutex.
type core struct {
	reps      []replicaState
	maxFail   int
	maxOut    int
	target    policy.Ref // the newest ref given to Load
	hasTarget bool
}

func newCore(names []string, maxFail, maxOut int, newBackoff func() backoff.BackOff) *core {
	c := &core{reps: make([]replicaState, len(names)), maxFail: maxFail, maxOut: maxOut}
	for i, n := range names {
		c.reps[i] = replicaState{name: n, bo: newBackoff()}
	}
	return c
}

// acquire chooses the replica for a call that has already failed on the
// replicas in tried (most recent last), and counts the call as outstanding
// there. The rule: not ejected, not in tried, under maxOut; then the
// highest served version; then the fewest outstanding; then the lowest
// index.
func (c *core) acquire(tried []int) (int, pickResult) {
	best, full := -1, false
	for i := range c.reps {
		r := &c.reps[i]
		if r.ejected || contains(tried, i) {
			continue
		}
		if c.maxOut > 0 && r.outstanding >= c.maxOut {
			full = true
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := &c.reps[best]
		if rk, bk := r.rank(), b.rank(); rk > bk || (rk == bk && r.outstanding < b.outstanding) {
			best = i
		}
	}
	if best < 0 {
		if full {
			return -1, pickFull
		}
		return -1, pickNone
	}
	r := &c.reps[best]
	r.outstanding++
	r.calls++
	if len(tried) > 0 {
		c.reps[tried[len(tried)-1]].movedAway++
	}
	return best, picked
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// admission numbers replica i's current admission (its re-admissions so
// far); a caller reads it with acquire and hands it back to release.
func (c *core) admission(i int) int64 { return c.reps[i].readmissions }

// release ends a call on replica i that began in admission since. It
// reports whether the call ejected the replica. A transient failure of a
// call that began before the replica's latest re-admission (one cut off
// by the failure that ejected it, ending only now) is counted but neither
// adds to the consecutive failures nor ejects: it says nothing of the
// replica since it came back.
func (c *core) release(i int, since int64, out outcome, now time.Time) (ejected bool) {
	r := &c.reps[i]
	r.outstanding--
	switch out {
	case outcomeOK:
		r.consec = 0
	case outcomeTransient:
		r.failures++
		if since != r.readmissions {
			return false
		}
		r.consec++
		if !r.ejected && r.consec >= c.maxFail {
			c.eject(i, now)
			return true
		}
	case outcomeError:
		r.errors++
	}
	return false
}

func (c *core) eject(i int, now time.Time) {
	r := &c.reps[i]
	r.ejected = true
	r.ejections++
	r.bo.Reset()
	c.schedule(r, now)
}

// schedule sets r's next probe or re-load by its back-off.
func (c *core) schedule(r *replicaState, now time.Time) {
	d := r.bo.NextBackOff()
	if d == backoff.Stop {
		r.parked = true
		return
	}
	r.parked = false
	r.due = now.Add(d)
}

// setTarget records ref as the newest ref when it is not older than the
// current one, and returns the replicas a fan-out should load it on: every
// one that is not ejected (ejected ones load it on re-admission).
func (c *core) setTarget(ref policy.Ref) []int {
	if !c.hasTarget || ref.Version >= c.target.Version {
		c.target, c.hasTarget = ref, true
	}
	var out []int
	for i := range c.reps {
		if !c.reps[i].ejected {
			out = append(out, i)
		}
	}
	return out
}

// loaded records the end of a fan-out Load of ref on replica i. A failed
// Load of the current target marks the replica stale and schedules a
// re-load.
func (c *core) loaded(i int, ref policy.Ref, err error, now time.Time) {
	r := &c.reps[i]
	if err == nil {
		c.setServed(r, ref.Version)
		if !c.behind(r) {
			r.stale = false
		}
		return
	}
	r.loadFailures++
	if c.hasTarget && ref.Version >= c.target.Version && c.behind(r) {
		r.stale = true
		if !r.busy && !r.ejected {
			r.bo.Reset()
			c.schedule(r, now)
		}
	}
}

// setServed records that r serves v; an older v (a Load that lost a race
// with a newer one) does not lower it.
func (c *core) setServed(r *replicaState, v policy.Version) {
	if !r.hasServed || v >= r.served {
		r.served, r.hasServed = v, true
	}
}

func (c *core) behind(r *replicaState) bool {
	return c.hasTarget && (!r.hasServed || r.served < c.target.Version)
}

// dueWork hands out the health-loop work due at now, marking those
// replicas busy, and returns the earliest later due time (ok false when
// nothing else is scheduled).
func (c *core) dueWork(now time.Time, jobs []job) (_ []job, next time.Time, ok bool) {
	for i := range c.reps {
		r := &c.reps[i]
		if r.busy || r.parked {
			continue
		}
		var kind jobKind
		switch {
		case r.ejected:
			kind = jobProbe
		case r.stale && c.behind(r):
			kind = jobReload
		default:
			r.stale = false
			continue
		}
		if r.due.After(now) {
			if !ok || r.due.Before(next) {
				next, ok = r.due, true
			}
			continue
		}
		r.busy = true
		jobs = append(jobs, job{i: i, kind: kind, ref: c.target, hasRef: c.hasTarget})
	}
	return jobs, next, ok
}

// probed ends a probe job: err is the probe's or the re-load's failure;
// loaded says ref was loaded. It reports whether the replica was
// re-admitted.
func (c *core) probed(j job, loaded bool, err error, now time.Time) bool {
	r := &c.reps[j.i]
	r.busy = false
	if loaded {
		c.setServed(r, j.ref.Version)
	}
	if err != nil {
		r.probeFailures++
		c.schedule(r, now)
		return false
	}
	r.ejected = false
	r.consec = 0
	r.readmissions++
	r.bo.Reset()
	r.stale = c.behind(r)
	if r.stale {
		r.due = now // the target moved on during the probe: re-load at once
	}
	return true
}

// reloaded ends a re-load job.
func (c *core) reloaded(j job, err error, now time.Time) {
	r := &c.reps[j.i]
	r.busy = false
	if err != nil {
		r.loadFailures++
		c.schedule(r, now)
		return
	}
	c.setServed(r, j.ref.Version)
	r.bo.Reset()
	r.stale = c.behind(r)
	if r.stale {
		r.due = now
	}
}

// abandon ends a job that was cut off by the health loop's shutdown,
// recording nothing; the work is due again at once.
func (c *core) abandon(j job) { c.reps[j.i].busy = false }

// newest returns the newest version a routable replica serves.
func (c *core) newest() (policy.Version, bool) {
	var v policy.Version
	ok := false
	for i := range c.reps {
		r := &c.reps[i]
		if !r.ejected && r.hasServed && (!ok || r.served > v) {
			v, ok = r.served, true
		}
	}
	return v, ok
}

// recordGap adds one |sampler − trainer| log-prob gap for replica i.
func (c *core) recordGap(i int, gap float64) {
	if gap < 0 {
		gap = -gap
	}
	if gap != gap { // NaN
		return
	}
	c.reps[i].gapSum += gap
	c.reps[i].gapN++
}
