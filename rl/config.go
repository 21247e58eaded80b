package rl

import (
	"errors"
	"fmt"
	"time"
)

// StalePolicy says what happens to a trajectory group that has become too
// stale to train on (see Config.MaxStaleness).
type StalePolicy string

const (
	// Pace never lets a group become too stale: a rollout is admitted only
	// while accepted + running < (k + s + 1) × GroupsPerBatch, where s is the
	// version the sampler serves (AReaL's staleness manager), and the
	// learner trains the groups that would otherwise expire first.
	Pace StalePolicy = "pace"
	// Drop discards an over-stale group and counts it.
	Drop StalePolicy = "drop"
	// Requeue hands an over-stale group's prompt back to the dataset to be
	// sampled again, and counts it. At the end of a finite dataset the
	// rollout workers wait while a prompt may still come back, and the last
	// batch may be short, so that every prompt handed out is trained.
	Requeue StalePolicy = "requeue"
)

// Defaults of Config's zero fields that other packages apply too (a
// rollout.Workers or rollout.Runner used on its own, a weights.Syncer): one
// definition, used by all of them.
const (
	DefaultFailureLimit  = 100
	DefaultMaxTurns      = 64
	DefaultWatchdog      = 30 * time.Second
	DefaultShutdownGrace = 10 * time.Second
)

// Config is the pipeline's configuration. It is a plain, serializable
// struct: zero fields mean the documented defaults (see WithDefaults), except
// GroupsPerBatch and GroupSize, which must be set. DefaultConfig returns a
// complete example.
//
// What the algorithm does with a batch (objective, loss, off-policy
// correction, KL penalty) is not configured here but by the Algorithm
// (rl/algo's Config). Decoding JSON into a Config rejects unknown keys, and
// keys that used to live here fail with a MovedKeyError naming their new
// place (see UnmarshalJSON).
type Config struct {
	// GroupsPerBatch is the number of trajectory groups per learner step
	// (required, ≥ 1).
	GroupsPerBatch int `json:"groups_per_batch"`
	// GroupSize is the number of trajectories per group, i.e. samples per
	// prompt (required, ≥ 1).
	GroupSize int `json:"group_size"`
	// MaxStaleness k is the largest staleness, in policy versions, of a
	// group the learner trains on: 0 is synchronous RL, k ≥ 1 overlaps
	// sampling and training. Must be ≥ 0.
	MaxStaleness int `json:"max_staleness"`
	// StalePolicy is pace (the default), drop or requeue.
	StalePolicy StalePolicy `json:"stale_policy,omitempty"`
	// Workers is the number of rollout goroutines. Default:
	// GroupsPerBatch × (MaxStaleness + 1), enough to fill the staleness
	// window.
	Workers int `json:"workers,omitempty"`
	// BufferLimit bounds the groups accepted but not yet trained (buffered
	// and, with pace, also in flight); producers block when it is reached.
	// Default (MaxStaleness + 1) × GroupsPerBatch; must be ≥ GroupsPerBatch.
	BufferLimit int `json:"buffer_limit,omitempty"`
	// Steps is the number of learner steps to run; 0 means until the
	// dataset is exhausted or the context ends.
	Steps int `json:"steps,omitempty"`
	// Substeps splits each batch into this many mini-batches, each with its
	// own optimizer step (default 1; must divide GroupsPerBatch): the loop
	// calls Algorithm.Batch once per substep, and the buffer counts Substeps
	// versions per learner step. Staleness is measured at the batch's first
	// optimizer step.
	Substeps int `json:"substeps,omitempty"`
	// Adam holds the optimizer settings (zero fields mean Tinker's defaults).
	Adam AdamParams `json:"adam"`
	// Sampling holds the sampling settings; a zero MaxTokens means 256 and
	// an all-zero value means {MaxTokens: 256, Temperature: 1}.
	Sampling SamplingParams `json:"sampling"`
	// Seed seeds every random choice the loop makes.
	Seed int64 `json:"seed,omitempty"`
	// SaveEvery saves the full training state every this many steps
	// (0 = never).
	SaveEvery int `json:"save_every,omitempty"`
	// Run names the run in published references; default "run".
	Run string `json:"run,omitempty"`
	// FailureLimit stops the run with an error after this many rollouts in
	// a row failed (errors or panics in user code). Default 100.
	FailureLimit int `json:"failure_limit,omitempty"`
	// MaxTurns bounds the turns of one multi-turn episode (default 64).
	MaxTurns int `json:"max_turns,omitempty"`
	// Watchdog is how long any wait may last before the loop logs what it
	// is waiting for (and again every Watchdog after). Default 30s.
	Watchdog time.Duration `json:"watchdog,omitempty"`
	// ShutdownGrace is how long, after the context ends, the learner waits
	// for the trainer to confirm a step already submitted. Default 10s.
	ShutdownGrace time.Duration `json:"shutdown_grace,omitempty"`
}

// DefaultConfig returns a small complete configuration: 8 groups of 8 per
// step, synchronous (k = 0) with pacing.
func DefaultConfig() Config {
	return Config{GroupsPerBatch: 8, GroupSize: 8}.WithDefaults()
}

// WithDefaults returns c with zero fields replaced by their defaults. It
// does not validate.
func (c Config) WithDefaults() Config {
	if c.StalePolicy == "" {
		c.StalePolicy = Pace
	}
	k := max(c.MaxStaleness, 0)
	if c.Workers == 0 {
		c.Workers = c.GroupsPerBatch * (k + 1)
	}
	if c.BufferLimit == 0 {
		c.BufferLimit = c.GroupsPerBatch * (k + 1)
	}
	if c.Substeps == 0 {
		c.Substeps = 1
	}
	if c.Sampling.MaxTokens == 0 {
		if c.Sampling.Temperature == 0 && c.Sampling.TopK == 0 && c.Sampling.TopP == 0 &&
			c.Sampling.Seed == nil && c.Sampling.StopStrings == nil && c.Sampling.StopTokens == nil {
			c.Sampling.Temperature = 1
		}
		c.Sampling.MaxTokens = 256
	}
	if c.Run == "" {
		c.Run = "run"
	}
	if c.FailureLimit == 0 {
		c.FailureLimit = DefaultFailureLimit
	}
	if c.MaxTurns == 0 {
		c.MaxTurns = DefaultMaxTurns
	}
	if c.Watchdog == 0 {
		c.Watchdog = DefaultWatchdog
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	return c
}

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("rl: invalid config")

func bad(field string, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s", ErrConfig, field, fmt.Sprintf(format, args...))
}

// Validate checks c after applying defaults; each error names the field,
// the value given and the values allowed.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.GroupsPerBatch < 1:
		return bad("GroupsPerBatch", "is %d; must be at least 1 (groups per learner step)", c.GroupsPerBatch)
	case c.GroupSize < 1:
		return bad("GroupSize", "is %d; must be at least 1 (samples per prompt)", c.GroupSize)
	case c.MaxStaleness < 0:
		return bad("MaxStaleness", "is %d; must be ≥ 0 (0 = synchronous, k ≥ 1 = asynchronous)", c.MaxStaleness)
	case c.Workers < 1:
		return bad("Workers", "is %d; must be ≥ 1, or 0 for the default", c.Workers)
	case c.BufferLimit < 0:
		return bad("BufferLimit", "is %d; must be ≥ GroupsPerBatch (%d), or 0 for the default", c.BufferLimit, c.GroupsPerBatch)
	case c.BufferLimit < c.GroupsPerBatch:
		return bad("BufferLimit", "is %d, smaller than GroupsPerBatch %d; must be ≥ GroupsPerBatch, or 0 for the default", c.BufferLimit, c.GroupsPerBatch)
	case c.Steps < 0:
		return bad("Steps", "is %d; must be ≥ 0 (0 = until the dataset is exhausted)", c.Steps)
	case c.Substeps < 1 || c.GroupsPerBatch%c.Substeps != 0:
		return bad("Substeps", "is %d; must be ≥ 1 and divide GroupsPerBatch %d", c.Substeps, c.GroupsPerBatch)
	case c.SaveEvery < 0:
		return bad("SaveEvery", "is %d; must be ≥ 0 (0 = never)", c.SaveEvery)
	case c.FailureLimit < 0:
		return bad("FailureLimit", "is %d; must be ≥ 1, or 0 for the default %d", c.FailureLimit, DefaultFailureLimit)
	case c.MaxTurns < 0:
		return bad("MaxTurns", "is %d; must be ≥ 1, or 0 for the default %d", c.MaxTurns, DefaultMaxTurns)
	case c.Watchdog < 0:
		return bad("Watchdog", "is %v; must be positive, or 0 for the default %v", c.Watchdog, DefaultWatchdog)
	case c.ShutdownGrace < 0:
		return bad("ShutdownGrace", "is %v; must be positive, or 0 for the default %v", c.ShutdownGrace, DefaultShutdownGrace)
	}
	switch c.StalePolicy {
	case Pace, Drop, Requeue:
	default:
		return bad("StalePolicy", "is %q; allowed: pace, drop, requeue", c.StalePolicy)
	}
	if err := c.Adam.Validate(); err != nil {
		return fmt.Errorf("%w: Adam: %w", ErrConfig, err)
	}
	if err := c.Sampling.Validate(); err != nil {
		return fmt.Errorf("%w: Sampling: %w", ErrConfig, err)
	}
	return nil
}
