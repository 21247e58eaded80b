// Package buffer is tandem's replay buffer: it holds trajectory groups
// between the rollout workers that produce them and the learner that trains
// on them, tagged by the policy version that generated them.
//
// The buffer is group-aware (a group is never split), bounded (producers
// block when it is full), and applies the staleness rule: when the learner
// at version s takes a batch, no group with s − v > MaxStaleness is in it.
// What happens to such a group is the stale policy: drop discards it,
// requeue hands it back so its prompt is sampled again, and pace admits
// rollouts so that it never happens (see sync/staleness). Every group that
// enters is accounted for: trained, dropped, requeued, or drained at
// shutdown.
//
// [Core] is the single-threaded, deterministic buffer, admission included
// (it drives staleness.Core); [Buffer] wraps it for concurrent use under
// one mutex and calls nothing but Core's methods. Buffer.Admit is the one
// admission path of the pipeline.
package buffer

import (
	"errors"
	"fmt"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sync/staleness"
)

// Config sets the buffer's rules.
type Config struct {
	// GroupsPerBatch is the number of groups per Take (≥ 1).
	GroupsPerBatch int
	// MaxStaleness k (≥ 0), in versions.
	MaxStaleness int
	// Policy is rl.Pace (the default), rl.Drop or rl.Requeue.
	Policy rl.StalePolicy
	// Limit bounds the groups held (with pace: held or in flight); 0 means
	// (k + 1) × GroupsPerBatch; must be ≥ GroupsPerBatch.
	Limit int
	// VersionsPerStep is the number of versions one learner step adds
	// (optimizer sub-steps per batch); 0 means 1.
	VersionsPerStep int
	// Start is the learner's version when the run starts.
	Start policy.Version
}

// FromConfig derives the buffer's configuration from the run's.
func FromConfig(c rl.Config, start policy.Version) Config {
	c = c.WithDefaults()
	return Config{
		GroupsPerBatch:  c.GroupsPerBatch,
		MaxStaleness:    c.MaxStaleness,
		Policy:          c.StalePolicy,
		Limit:           c.BufferLimit,
		VersionsPerStep: c.Substeps,
		Start:           start,
	}
}

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("buffer: invalid config")

func (c Config) withDefaults() Config {
	if c.Policy == "" {
		c.Policy = rl.Pace
	}
	return c
}

// gate is the admission gate's configuration: the buffer's bounds are the
// gate's, so their defaults and checks live there.
func (c Config) gate() staleness.Config {
	return staleness.Config{
		MaxStaleness:    c.MaxStaleness,
		GroupsPerBatch:  c.GroupsPerBatch,
		Limit:           c.Limit,
		Pace:            c.Policy == rl.Pace,
		VersionsPerStep: c.VersionsPerStep,
		Start:           c.Start,
	}
}

// Validate checks every field; errors name the field and what is allowed.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.gate().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch c.Policy {
	case rl.Pace, rl.Drop, rl.Requeue:
	default:
		return fmt.Errorf("%w: Policy is %q; allowed: pace, drop, requeue", ErrConfig, c.Policy)
	}
	return nil
}

// Stats counts what the buffer has seen. Every accepted group ends up in
// exactly one of Trained, Dropped, Requeued, Drained, or is still Held.
type Stats struct {
	staleness.Stats
	Dropped  int64 // over-stale groups discarded (drop, or a pace violation)
	Requeued int64 // over-stale groups handed back (requeue)
	Drained  int64 // groups removed by Drain at shutdown
	Held     int64 // groups in the buffer now
}

// Core is the buffer's logic without goroutines: it is not safe for
// concurrent use, and it never blocks; callers ask CanPut and CanTake.
type Core struct {
	cfg   Config
	gate  *staleness.Core
	ready []*queue // one per Admitted version held, ascending; none empty
	free  []*queue // emptied queues, for reuse
	step  policy.Version
	st    Stats
}

// queue holds the groups admitted at one version, in arrival order (from
// head on). Keeping one queue per version makes Put an append however the
// rollouts' completions interleave, and Take a copy from the front.
type queue struct {
	v    policy.Version
	gs   []rl.Group
	head int
}

func (q *queue) len() int { return len(q.gs) - q.head }

// NewCore returns an empty buffer for cfg.
func NewCore(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	gate, err := staleness.NewCore(cfg.gate())
	if err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	cfg.Limit = gate.Config().Limit
	cfg.VersionsPerStep = gate.Config().VersionsPerStep
	return &Core{cfg: cfg, gate: gate, step: cfg.Start}, nil
}

// Config returns the configuration with defaults applied.
func (c *Core) Config() Config { return c.cfg }

// Limit returns the bound on held groups (with pace: held or in flight),
// defaults applied.
func (c *Core) Limit() int { return c.cfg.Limit }

// Serve records the version the sampler serves.
func (c *Core) Serve(v policy.Version) { c.gate.Serve(v) }

// Admit starts a rollout if the gate allows; see staleness.Core.Admit.
func (c *Core) Admit() (policy.Version, bool) { return c.gate.Admit() }

// Fail ends a rollout admitted at version admitted that produced no group.
func (c *Core) Fail(admitted policy.Version) { c.gate.Finish(admitted, false) }

// Cancel undoes an Admit at version admitted whose rollout never started
// (the admission reached a caller that had given up): nothing is counted,
// as if Admit had not been called; see staleness.Core.Cancel.
func (c *Core) Cancel(admitted policy.Version) { c.gate.Cancel(admitted) }

// Running returns the rollouts admitted and not yet ended by Put or Fail.
func (c *Core) Running() int64 { return c.gate.Running() }

// CanPut reports whether Put would not exceed the bound.
func (c *Core) CanPut() bool { return c.st.Held < int64(c.cfg.Limit) }

// Put accepts g, whose rollout was admitted at g.Admitted, and numbers it:
// g.ID becomes the count of groups accepted before it. If g is already
// over-stale for the learner's current version, it is removed at once and
// returned with stale = true: the caller drops or requeues it (Stats say
// which). Put ignores the bound: callers check CanPut.
func (c *Core) Put(g rl.Group) (stale bool) {
	g.ID = uint64(c.gate.Stats().Accepted)
	c.gate.Finish(g.Admitted, true)
	if c.over(&g) {
		c.discard(&g)
		return true
	}
	q := c.queueFor(g.Admitted)
	q.gs = append(q.gs, g)
	c.st.Held++
	return false
}

// queueFor returns the queue of groups admitted at v, adding it in version
// order if there is none. Groups are held by the version the sampler served
// when their rollout was admitted: the order in which the gate's deadlines
// fall. Most Puts find their queue at the end.
func (c *Core) queueFor(v policy.Version) *queue {
	i := len(c.ready)
	for i > 0 && c.ready[i-1].v >= v {
		if c.ready[i-1].v == v {
			return c.ready[i-1]
		}
		i--
	}
	var q *queue
	if n := len(c.free); n > 0 {
		q, c.free = c.free[n-1], c.free[:n-1]
	} else {
		q = new(queue)
	}
	q.v = v
	c.ready = append(c.ready, nil)
	copy(c.ready[i+1:], c.ready[i:])
	c.ready[i] = q
	return q
}

// release recycles the emptied queue at index i of ready.
func (c *Core) release(i int) {
	q := c.ready[i]
	clear(q.gs)
	q.gs, q.head = q.gs[:0], 0
	c.free = append(c.free, q)
	copy(c.ready[i:], c.ready[i+1:])
	c.ready[len(c.ready)-1] = nil
	c.ready = c.ready[:len(c.ready)-1]
}

func (c *Core) over(g *rl.Group) bool {
	return g.Staleness(c.step) > int64(c.cfg.MaxStaleness)
}

func (c *Core) discard(g *rl.Group) {
	c.gate.Discard(g.Admitted)
	if c.cfg.Policy == rl.Requeue {
		c.st.Requeued++
	} else {
		c.st.Dropped++
	}
}

// Expire sets the learner's version to step and removes every held group
// that is over-stale at step, appending them to dst (the caller drops or
// requeues them, as Stats record).
func (c *Core) Expire(step policy.Version, dst []rl.Group) []rl.Group {
	c.step = step
	bound := step - policy.Version(c.cfg.MaxStaleness) // Version < bound is over-stale
	for i := 0; i < len(c.ready); {
		q := c.ready[i]
		if q.v >= bound {
			break // Admitted ≤ Version: no group in this queue or later ones is over-stale
		}
		keep := q.gs[:q.head]
		for _, g := range q.gs[q.head:] {
			if g.Version < bound {
				c.discard(&g)
				c.st.Held--
				dst = append(dst, g)
				continue
			}
			keep = append(keep, g)
		}
		clear(q.gs[len(keep):])
		q.gs = keep
		if q.len() == 0 {
			c.release(i)
			continue
		}
		i++
	}
	return dst
}

// CanTake reports whether the learner's next batch can be taken now (see
// staleness.Core.CanTake).
func (c *Core) CanTake() bool { return c.gate.CanTake() }

// Take moves the batch — the GroupsPerBatch earliest-admitted groups — to
// dst and returns it. The caller must have called Expire for the learner's
// version and seen CanTake.
func (c *Core) Take(dst []rl.Group) []rl.Group {
	n := c.cfg.GroupsPerBatch
	c.gate.Take()
	c.st.Held -= int64(n)
	for n > 0 {
		q := c.ready[0]
		m := min(n, q.len())
		dst = append(dst, q.gs[q.head:q.head+m]...)
		clear(q.gs[q.head : q.head+m])
		q.head += m
		n -= m
		if q.len() == 0 {
			c.release(0)
		}
	}
	return dst
}

// TakeRest moves every held group to dst as one short batch, the last of
// a run whose data has run out (see Buffer.AwaitRefill), and returns it. The
// caller must have called Expire for the learner's version. With nothing
// held it takes nothing and records no step.
func (c *Core) TakeRest(dst []rl.Group) []rl.Group {
	if c.gate.TakeRest() == 0 {
		return dst
	}
	for len(c.ready) > 0 {
		q := c.ready[0]
		dst = append(dst, q.gs[q.head:]...)
		c.release(0)
	}
	c.st.Held = 0
	return dst
}

// Drain removes every held group and appends it to dst (for shutdown).
func (c *Core) Drain(dst []rl.Group) []rl.Group {
	for len(c.ready) > 0 {
		q := c.ready[0]
		for i := q.head; i < len(q.gs); i++ {
			c.gate.Discard(q.gs[i].Admitted)
		}
		dst = append(dst, q.gs[q.head:]...)
		c.st.Drained += int64(q.len())
		c.release(0)
	}
	c.st.Held = 0
	return dst
}

// Len returns the number of held groups.
func (c *Core) Len() int { return int(c.st.Held) }

// Stats returns the counters.
func (c *Core) Stats() Stats {
	st := c.st
	st.Stats = c.gate.Stats()
	st.Stats.Discarded -= st.Drained // drained groups are reported apart
	return st
}
