package rl

import (
	"errors"
	"fmt"
	"math"
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
	// sampled again, and counts it.
	Requeue StalePolicy = "requeue"
)

// Correction selects an off-policy correction for stale data. The
// algorithms issue implements them; the loop only carries the choice.
type Correction string

const (
	NoCorrection Correction = "none"      // plain importance sampling
	TIS          Correction = "tis"       // truncated importance sampling
	Decoupled    Correction = "decoupled" // AReaL's decoupled PPO (proximal policy)
)

// Config is the pipeline's configuration. It is a plain, serializable
// struct: zero fields mean the documented defaults (see WithDefaults), except
// GroupsPerBatch and GroupSize, which must be set. DefaultConfig returns a
// complete example.
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
	// own optimizer step (default 1; must divide GroupsPerBatch). Staleness
	// is measured at the batch's first optimizer step.
	Substeps int `json:"substeps,omitempty"`
	// Loss is the per-token loss; default importance_sampling.
	Loss Loss `json:"loss"`
	// Adam holds the optimizer settings (zero fields mean Tinker's defaults).
	Adam AdamParams `json:"adam"`
	// Sampling holds the sampling settings; a zero MaxTokens means 256 and
	// an all-zero value means {MaxTokens: 256, Temperature: 1}.
	Sampling SamplingParams `json:"sampling"`
	// Correction is none (default), tis or decoupled.
	Correction Correction `json:"correction,omitempty"`
	// KLCoef weighs a KL penalty against the base model (0 = off).
	KLCoef float64 `json:"kl_coef,omitempty"`
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
	if c.Loss.Name == "" {
		c.Loss.Name = ImportanceSampling
	}
	if c.Sampling.MaxTokens == 0 {
		if c.Sampling.Temperature == 0 && c.Sampling.TopK == 0 && c.Sampling.TopP == 0 &&
			c.Sampling.Seed == nil && c.Sampling.StopStrings == nil && c.Sampling.StopTokens == nil {
			c.Sampling.Temperature = 1
		}
		c.Sampling.MaxTokens = 256
	}
	if c.Correction == "" {
		c.Correction = NoCorrection
	}
	if c.Run == "" {
		c.Run = "run"
	}
	if c.FailureLimit == 0 {
		c.FailureLimit = 100
	}
	if c.MaxTurns == 0 {
		c.MaxTurns = 64
	}
	if c.Watchdog == 0 {
		c.Watchdog = 30 * time.Second
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
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
		return bad("FailureLimit", "is %d; must be ≥ 1, or 0 for the default 100", c.FailureLimit)
	case c.MaxTurns < 0:
		return bad("MaxTurns", "is %d; must be ≥ 1, or 0 for the default 64", c.MaxTurns)
	case c.Watchdog < 0:
		return bad("Watchdog", "is %v; must be positive, or 0 for the default 30s", c.Watchdog)
	case c.ShutdownGrace < 0:
		return bad("ShutdownGrace", "is %v; must be positive, or 0 for the default 10s", c.ShutdownGrace)
	case !(c.KLCoef >= 0) || math.IsInf(c.KLCoef, 0):
		return bad("KLCoef", "is %v; must be a finite number ≥ 0", c.KLCoef)
	}
	switch c.StalePolicy {
	case Pace, Drop, Requeue:
	default:
		return bad("StalePolicy", "is %q; allowed: pace, drop, requeue", c.StalePolicy)
	}
	switch c.Correction {
	case NoCorrection, TIS, Decoupled:
	default:
		return bad("Correction", "is %q; allowed: none, tis, decoupled", c.Correction)
	}
	switch c.Loss.Name {
	case CrossEntropy, ImportanceSampling, PPO, CISPO, DRO:
	default:
		return bad("Loss.Name", "is %q; allowed: cross_entropy, importance_sampling, ppo, cispo, dro", c.Loss.Name)
	}
	if err := c.Adam.Validate(); err != nil {
		return fmt.Errorf("%w: Adam: %w", ErrConfig, err)
	}
	if err := c.Sampling.Validate(); err != nil {
		return fmt.Errorf("%w: Sampling: %w", ErrConfig, err)
	}
	return nil
}
