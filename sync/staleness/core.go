// Package staleness is the admission gate of the rollout pipeline: it
// decides when a new rollout may start so that the learner never trains on
// a group more than MaxStaleness versions old.
//
// With pacing (AReaL's staleness manager), a rollout is admitted only while
//
//	accepted + running < (k + s + 1) × GroupsPerBatch
//
// where s is the version the sampler serves (in learner steps since the
// start), accepted counts the groups accepted into the buffer or trained so
// far and running the rollouts in flight. A rollout admitted when the
// sampler served s must be trained by step s + k — its deadline. The learner
// asks CanTake before each step: it says yes only when the batch of the B
// earliest-admitted ready groups leaves every remaining group (ready or still
// running) a place in a batch before its deadline — an earliest-deadline-first
// schedule that stays feasible. Together the two rules make sure nothing ever
// becomes over-stale and nothing is dropped, however out of order rollouts
// finish. With
// k = 0 this is synchronous RL: after a step nothing is admitted until the
// sampler serves the new version.
//
// Without pacing (the drop and requeue policies) a rollout is admitted
// while the sampler lags the learner's target version by at most k; what
// becomes over-stale anyway is the buffer's business.
//
// [Core] is the deterministic bookkeeping, single-threaded and testable step
// by step. It has one concurrent driver, package buffer's Buffer, which
// calls it under the buffer's lock together with the buffer's own rules:
// there is one admission path, and it goes through that lock.
package staleness

import (
	"errors"
	"fmt"

	"github.com/tandemrl/tandem/policy"
)

// Config sets the gate's rules.
type Config struct {
	// MaxStaleness k, in versions (≥ 0).
	MaxStaleness int
	// GroupsPerBatch is the number of groups the learner takes per step (≥ 1).
	GroupsPerBatch int
	// Limit bounds the groups admitted but not yet trained (buffered or
	// running) when pacing; 0 means (k+1) × GroupsPerBatch. Must be ≥
	// GroupsPerBatch.
	Limit int
	// Pace selects AReaL-style pacing; otherwise only the version-lag rule
	// applies.
	Pace bool
	// VersionsPerStep is the number of versions one learner step adds
	// (its optimizer sub-steps); 0 means 1.
	VersionsPerStep int
	// Start is the learner's version when the run starts.
	Start policy.Version
}

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("staleness: invalid config")

func (c Config) withDefaults() Config {
	if c.VersionsPerStep == 0 {
		c.VersionsPerStep = 1
	}
	if c.Limit == 0 {
		c.Limit = (c.MaxStaleness + 1) * c.GroupsPerBatch
	}
	return c
}

// Validate checks every field.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.MaxStaleness < 0:
		return fmt.Errorf("%w: MaxStaleness is %d; must be ≥ 0", ErrConfig, c.MaxStaleness)
	case c.GroupsPerBatch < 1:
		return fmt.Errorf("%w: GroupsPerBatch is %d; must be ≥ 1", ErrConfig, c.GroupsPerBatch)
	case c.Limit < c.GroupsPerBatch:
		return fmt.Errorf("%w: Limit is %d; must be ≥ GroupsPerBatch %d, or 0 for the default", ErrConfig, c.Limit, c.GroupsPerBatch)
	case c.VersionsPerStep < 1:
		return fmt.Errorf("%w: VersionsPerStep is %d; must be ≥ 1", ErrConfig, c.VersionsPerStep)
	}
	return nil
}

// Stats counts what the gate has seen since the start.
type Stats struct {
	Admitted  int64 // rollouts admitted
	Accepted  int64 // rollouts whose group entered the buffer
	Failed    int64 // rollouts that ended without a group
	Discarded int64 // accepted groups later dropped or requeued
	Trained   int64 // groups handed to the learner
	Steps     int64 // batches handed to the learner
	Running   int64 // rollouts in flight now
	Peak      int64 // the most rollouts ever in flight at once
	Served    policy.Version
}

type bucket struct {
	admitted policy.Version
	running  int64
	ready    int64
}

// Core is the gate's bookkeeping. It is not safe for concurrent use.
type Core struct {
	cfg       Config
	kSteps    int64 // MaxStaleness in learner steps
	served    policy.Version
	hasServed bool
	buckets   []bucket // untrained groups by admitted version, ascending
	untrained int64
	ready     int64
	st        Stats
}

// NewCore returns a core for cfg. Nothing is admitted until Serve reports
// the first version the sampler serves.
func NewCore(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Core{cfg: cfg, kSteps: int64(cfg.MaxStaleness / cfg.VersionsPerStep)}, nil
}

// Config returns the configuration with defaults applied.
func (c *Core) Config() Config { return c.cfg }

// step converts a version to learner steps since the start (floor).
func (c *Core) step(v policy.Version) int64 {
	d := int64(v - c.cfg.Start)
	s := int64(c.cfg.VersionsPerStep)
	if d < 0 {
		return -((-d + s - 1) / s)
	}
	return d / s
}

// Deadline returns the learner step by which a group admitted at version
// admitted must be trained.
func (c *Core) Deadline(admitted policy.Version) int64 { return c.step(admitted) + c.kSteps }

// Target is the version the learner reaches once the batches taken so far
// are trained.
func (c *Core) Target() policy.Version {
	return c.cfg.Start + policy.Version(c.st.Steps*int64(c.cfg.VersionsPerStep))
}

// Untrained returns the groups admitted and not yet trained: ready or
// running.
func (c *Core) Untrained() int64 { return c.untrained }

// Ready returns the groups accepted and not yet trained.
func (c *Core) Ready() int64 { return c.ready }

// Running returns the rollouts admitted and not yet finished.
func (c *Core) Running() int64 { return c.st.Running }

// CanAdmit reports whether a rollout may start now.
func (c *Core) CanAdmit() bool {
	if !c.hasServed {
		return false
	}
	// Pacing's window; with k = 0 it also applies to drop and requeue, so
	// that synchronous RL admits one batch per version and wastes nothing
	// (without it, workers that finish early start rollouts that can only
	// expire).
	if c.cfg.Pace || c.cfg.MaxStaleness == 0 {
		alive := c.st.Trained + c.untrained
		window := (c.kSteps + c.step(c.served) + 1) * int64(c.cfg.GroupsPerBatch)
		if alive >= window || c.untrained >= int64(c.cfg.Limit) {
			return false
		}
		if c.cfg.Pace {
			return true
		}
	}
	return int64(c.Target()-c.served) <= int64(c.cfg.MaxStaleness)
}

// Admit starts a rollout if CanAdmit; it returns the version the sampler
// serves, which the caller records as the group's Admitted version.
func (c *Core) Admit() (policy.Version, bool) {
	if !c.CanAdmit() {
		return 0, false
	}
	c.untrained++
	c.st.Admitted++
	c.st.Running++
	c.st.Peak = max(c.st.Peak, c.st.Running)
	if n := len(c.buckets); n > 0 && c.buckets[n-1].admitted == c.served {
		c.buckets[n-1].running++
	} else {
		c.buckets = append(c.buckets, bucket{admitted: c.served, running: 1})
	}
	return c.served, true
}

func (c *Core) bucket(admitted policy.Version, what string) int {
	for i := range c.buckets {
		if c.buckets[i].admitted == admitted {
			return i
		}
	}
	panic(fmt.Sprintf("staleness: %s: no group admitted at version %d is untrained (bookkeeping bug)", what, admitted))
}

func (c *Core) prune(i int) {
	if c.buckets[i].running == 0 && c.buckets[i].ready == 0 {
		c.buckets = append(c.buckets[:i], c.buckets[i+1:]...)
	}
}

// Finish ends a rollout admitted at version admitted: accepted means its
// group entered the buffer (it is now ready); otherwise its place is freed.
// Finishing a rollout that is not running panics (a bookkeeping bug).
func (c *Core) Finish(admitted policy.Version, accepted bool) {
	i := c.bucket(admitted, "Finish")
	if c.buckets[i].running == 0 {
		panic(fmt.Sprintf("staleness: Finish(%d): no rollout admitted at that version is running", admitted))
	}
	c.buckets[i].running--
	c.st.Running--
	if accepted {
		c.buckets[i].ready++
		c.ready++
		c.st.Accepted++
		return
	}
	c.st.Failed++
	c.untrained--
	c.prune(i)
}

// Cancel undoes an Admit at version admitted whose rollout never started:
// its grant reached a caller that had given up waiting (see waitq.Wait).
// Unlike Finish(admitted, false), which ends a rollout that ran and counts
// it Failed, Cancel leaves the core as if that Admit had not happened —
// every count, the place and the bucket — except Peak, a high-water mark
// that keeps the moment the grant was made. Cancelling an admission that is
// not running panics (a bookkeeping bug).
func (c *Core) Cancel(admitted policy.Version) {
	i := c.bucket(admitted, "Cancel")
	if c.buckets[i].running == 0 {
		panic(fmt.Sprintf("staleness: Cancel(%d): no rollout admitted at that version is running", admitted))
	}
	c.buckets[i].running--
	c.st.Running--
	c.st.Admitted--
	c.untrained--
	c.prune(i)
}

// Discard records that a ready group admitted at version admitted left the
// buffer untrained (dropped or requeued), freeing its place.
func (c *Core) Discard(admitted policy.Version) {
	i := c.bucket(admitted, "Discard")
	if c.buckets[i].ready == 0 {
		panic(fmt.Sprintf("staleness: Discard(%d): no ready group admitted at that version", admitted))
	}
	c.buckets[i].ready--
	c.ready--
	c.untrained--
	c.st.Discarded++
	c.prune(i)
}

// CanTake reports whether the learner may take its next batch now: at least
// GroupsPerBatch groups are ready and, with pacing, taking the
// GroupsPerBatch earliest-admitted ready groups leaves every other untrained
// group a place before its deadline (at most (t − d) × GroupsPerBatch
// groups due by step t remain, d being the step being taken). When it says
// no, the learner waits for running rollouts.
func (c *Core) CanTake() bool {
	b := int64(c.cfg.GroupsPerBatch)
	if c.ready < b {
		return false
	}
	if !c.cfg.Pace {
		return true
	}
	need, left := b, int64(0)
	for _, bk := range c.buckets {
		take := min(bk.ready, need)
		need -= take
		left += bk.running + bk.ready - take
		if slack := c.Deadline(bk.admitted) - c.st.Steps; left > max(slack, 0)*b {
			return false
		}
	}
	return true
}

// Take records that the learner took its batch: the GroupsPerBatch
// earliest-admitted ready groups. The caller must have seen CanTake. The
// learner's target version advances by one step.
func (c *Core) Take() {
	need := int64(c.cfg.GroupsPerBatch)
	if c.ready < need {
		panic(fmt.Sprintf("staleness: Take with %d ready groups; a batch needs %d", c.ready, need))
	}
	c.take(need)
}

// TakeRest records that the learner took every ready group as one short
// batch: the end of the data, when no more groups can arrive (requeue at
// the end of a finite dataset). It returns how many it took; with none
// ready it records nothing and returns 0. The learner's target version
// advances by one step, as for Take.
func (c *Core) TakeRest() int64 {
	n := c.ready
	if n > 0 {
		c.take(n)
	}
	return n
}

// take records a batch of the n earliest-admitted ready groups.
func (c *Core) take(n int64) {
	for i, need := 0, n; need > 0; {
		take := min(c.buckets[i].ready, need)
		c.buckets[i].ready -= take
		need -= take
		if c.buckets[i].ready == 0 && c.buckets[i].running == 0 {
			c.buckets = append(c.buckets[:i], c.buckets[i+1:]...)
			continue
		}
		i++
	}
	c.ready -= n
	c.untrained -= n
	c.st.Trained += n
	c.st.Steps++
}

// Serve records that the sampler now serves v. Versions never go back; an
// older v is ignored.
func (c *Core) Serve(v policy.Version) {
	if c.hasServed && v <= c.served {
		return
	}
	c.served, c.hasServed = v, true
	c.st.Served = v
}

// Served returns the version the sampler serves, and false before the first
// Serve.
func (c *Core) Served() (policy.Version, bool) { return c.served, c.hasServed }

// Stats returns the counters.
func (c *Core) Stats() Stats { return c.st }
