package algo

import (
	"context"
	"errors"
	"fmt"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// ErrNoBaseModel is returned by New when the KL penalty is on without a
// BaseModel to score against.
var ErrNoBaseModel = errors.New("algo: KLCoef > 0 needs a BaseModel")

// GRPO is a group-relative policy-gradient algorithm (an rl.Algorithm):
// each trajectory's advantage is its return minus its group's mean
// (optionally over the group's standard deviation), every transition
// becomes one datum, and the configured Objective decides the trainer loss
// and the off-policy correction. It is the pipeline's default algorithm
// (rl/loop uses New(Config{}, nil) when given none).
//
// A GRPO is not safe for concurrent use: the loop calls Batch from one
// goroutine. It reuses its memory from one Batch call to the next, as
// rl.Algorithm allows: the returned Batch (its datums, their slices and
// maps, Actions, Metrics) is valid until the next Batch call, and
// RatioMetrics and OutputMetrics read the last batch until then. A stream
// of batches of one shape allocates nothing once the first has been built
// (for naive, ppo and tis without the KL penalty).
type GRPO struct {
	cfg  Config
	base BaseModel
	loss rl.Loss

	// The last batch: its units (read by RatioMetrics and decouple),
	// datums and action positions (in g.build's memory), and its metrics.
	build   builder
	last    []unit
	datums  []rl.Datum
	actions []rl.Span
	metrics map[string]float64
	// Per-call scratch: the returns of one group, the advantages of every
	// trajectory of the batch's groups, and which groups are uniform.
	rets, adv []float64
	uniform   []bool

	// prep builds the datums of Prepare's forward pass; prepared holds
	// π_prox per position of each transition's datum, computed by Prepare
	// for a learner step's groups; Batch consumes the entries.
	prep     builder
	prepared map[*rl.Transition][]float64
}

var _ rl.Algorithm = (*GRPO)(nil)

// New validates cfg and returns a GRPO. base scores the KL penalty and may
// be nil when cfg.KLCoef is 0.
func New(cfg Config, base BaseModel) (*GRPO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if cfg.KLCoef > 0 && base == nil {
		return nil, ErrNoBaseModel
	}
	g := &GRPO{cfg: cfg, base: base}
	g.loss = g.Loss()
	return g, nil
}

// Config returns the configuration with defaults applied.
func (g *GRPO) Config() Config { return g.cfg }

// Loss returns the trainer loss the objective uses (the Batch's Loss), in
// memory of its own.
func (g *GRPO) Loss() rl.Loss {
	c := g.cfg
	switch c.Objective {
	case PPO, Decoupled:
		return rl.Loss{Name: rl.PPO, Config: map[string]float64{
			rl.ClipLowThreshold: 1 - c.ClipEpsLow, rl.ClipHighThreshold: 1 + c.ClipEpsHigh}}
	case TIS:
		return rl.Loss{Name: rl.CISPO, Config: map[string]float64{
			rl.ClipLowThreshold: 0, rl.ClipHighThreshold: c.TruncateAt}}
	}
	return rl.Loss{Name: rl.ImportanceSampling}
}

// Batch implements rl.Algorithm. It costs one BaseModel call when the KL
// penalty is on and, for the decoupled objective, one t.Forward over the
// batch (none when Prepare covered it), waited for before Batch returns.
// The Batch is valid until the next call (see GRPO).
//
// Batch.Metrics holds:
//   - groups:uniform (groups whose returns are all equal), groups:filtered_uniform
//     (those left out), groups:kept, and groups:all_uniform = 1 when every
//     group was uniform and all were kept so that the batch is not empty;
//   - advantage:mean, abs_mean, std, min, max over action tokens (after the
//     KL shaping, before decoupled's weights) and tokens:action;
//   - with the KL penalty: kl:policy_base, the mean of log μ − log π_base
//     (tinker-cookbook's kl_policy_base, an estimate of KL(μ‖π_base)), and
//     kl:policy_base_v2, half the mean square;
//   - for decoupled: decoupled:behav_weight_mean and _max (w = π_prox/μ),
//     decoupled:behav_kl (mean log μ − log π_prox), decoupled:sampler_gap
//     (mean |log μ − log π_prox|: the sampler/trainer gap, since the
//     batch's Actions are empty), decoupled:capped_frac (tokens filtered by
//     BehaviourCap), decoupled:outside_clip_frac (tokens with w outside the
//     clip range: what a PPO against μ would clip now), and
//     decoupled:prepared = 1 when π_prox came from Prepare.
//
// Ratio statistics against the trainer's log-probs need the forward-backward
// output: see RatioMetrics.
func (g *GRPO) Batch(ctx context.Context, t rl.Trainer, _ policy.Version, groups []rl.Group) (rl.Batch, error) {
	if g.metrics == nil {
		g.metrics = make(map[string]float64, 16)
	}
	m := g.metrics
	clear(m)
	err := g.units(groups, m)
	units := g.last
	if err != nil {
		return rl.Batch{}, err
	}
	if len(units) == 0 {
		return rl.Batch{Loss: g.loss, Metrics: m}, nil
	}
	sums := g.build.sums
	if g.cfg.KLCoef > 0 {
		base, err := g.base.BaseLogprobs(ctx, g.datums)
		if err != nil {
			return rl.Batch{}, fmt.Errorf("algo: KL penalty: %w", err)
		}
		v1, v2, err := klShape(units, base, g.cfg.KLCoef, g.cfg.KLDiscount)
		if err != nil {
			return rl.Batch{}, err
		}
		m["kl:policy_base"] = v1
		m["kl:policy_base_v2"] = v2
		sums = tokenSums(units) // the shaping made the advantages vary within a datum
	}
	sums.record(m)
	b := rl.Batch{Datums: g.datums, Loss: g.loss, Metrics: m}
	if g.cfg.Objective == Decoupled {
		if err := g.decouple(ctx, t, b.Datums, m); err != nil {
			return rl.Batch{}, err
		}
		// The "logprobs" inputs now hold π_prox, not the sampler's: no
		// Actions, so the loop does not mistake them for sampler log-probs;
		// the sampler/trainer gap measured against π_prox (the trainer's
		// policy) is carried in GapSum/GapTokens instead.
		if gap, ok := m["decoupled:sampler_gap"]; ok {
			b.GapTokens = int(m["tokens:action"])
			b.GapSum = gap * float64(b.GapTokens)
		}
		return b, nil
	}
	b.Actions = g.actions
	return b, nil
}

// units computes advantages, filters uniform groups and builds one unit per
// transition, in memory of g.build, into g.last, g.datums and g.actions.
func (g *GRPO) units(groups []rl.Group, m map[string]float64) error {
	g.uniform, g.adv = g.uniform[:0], g.adv[:0]
	filtered := 0
	for gi := range groups {
		g.rets = g.rets[:0]
		for ti := range groups[gi].Trajectories {
			g.rets = append(g.rets, groups[gi].Trajectories[ti].Return())
		}
		var u bool
		g.adv, u = appendAdvantages(g.adv, g.rets, g.cfg.NormalizeStd)
		g.uniform = append(g.uniform, u)
		if u {
			filtered++
		}
	}
	keepAll := g.cfg.KeepUniform || filtered == len(groups)
	if !g.cfg.KeepUniform && filtered == len(groups) && len(groups) > 0 {
		// An empty batch would be refused by the trainer; zero advantages
		// train nothing but the KL term, as in AReaL's dynamic sampling.
		m["groups:all_uniform"] = 1
	}
	m["groups:uniform"] = float64(filtered)
	m["groups:filtered_uniform"] = 0
	m["groups:kept"] = float64(len(groups))
	if !keepAll {
		m["groups:filtered_uniform"] = float64(filtered)
		m["groups:kept"] = float64(len(groups) - filtered)
	}
	g.build.reset()
	defer func() { g.last, g.datums, g.actions = g.build.batch() }() // on error too: what was built
	off := 0
	for gi := range groups {
		grp := &groups[gi]
		adv := g.adv[off : off+len(grp.Trajectories)]
		off += len(grp.Trajectories)
		if g.uniform[gi] && !keepAll {
			continue
		}
		g.build.replica = grp.Replica
		for ti := range grp.Trajectories {
			trs := grp.Trajectories[ti].Transitions
			for k := range trs {
				if err := g.build.add(&trs[k], adv[ti]); err != nil {
					return fmt.Errorf("algo: group %d (id %d) trajectory %d turn %d: %w", gi, grp.ID, ti, k, err)
				}
			}
		}
	}
	return nil
}

// OutputMetrics implements rl.OutputMetrics with RatioMetrics.
func (g *GRPO) OutputMetrics(out rl.ForwardBackwardOutput) (map[string]float64, error) {
	return g.RatioMetrics(out)
}
