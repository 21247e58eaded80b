package algo

import (
	"context"
	"errors"
	"fmt"
	"math"

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
// and the off-policy correction.
//
// A GRPO is not safe for concurrent use: the loop calls Batch from one
// goroutine. The returned Batch owns fresh memory; GRPO keeps a reference to
// the last batch for RatioMetrics until the next call.
type GRPO struct {
	cfg  Config
	base BaseModel

	last []unit
	adv  []float64
	rets []float64
	loss rl.Loss
	// prepared holds π_prox per position of each transition's datum,
	// computed by Prepare for a learner step's groups; Batch consumes the
	// entries.
	prepared map[*rl.Transition][]float64
}

// Keys of the ppo and cispo loss configuration (Tinker's loss_fn_config).
const (
	ClipLowKey  = "clip_low_threshold"
	ClipHighKey = "clip_high_threshold"
)

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
	return &GRPO{cfg: cfg, base: base}, nil
}

// Config returns the configuration with defaults applied.
func (g *GRPO) Config() Config { return g.cfg }

// Loss returns the trainer loss the objective uses (the Batch's Loss).
func (g *GRPO) Loss() rl.Loss {
	c := g.cfg
	switch c.Objective {
	case PPO, Decoupled:
		return rl.Loss{Name: rl.PPO, Config: map[string]float64{
			ClipLowKey: 1 - c.ClipEpsLow, ClipHighKey: 1 + c.ClipEpsHigh}}
	case TIS:
		return rl.Loss{Name: rl.CISPO, Config: map[string]float64{
			ClipLowKey: 0, ClipHighKey: c.TruncateAt}}
	}
	return rl.Loss{Name: rl.ImportanceSampling}
}

// Batch implements rl.Algorithm. It costs one BaseModel call when the KL
// penalty is on and, for the decoupled objective, one t.Forward over the
// batch (none when Prepare covered it), waited for before Batch returns.
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
	m := make(map[string]float64, 16)
	units, err := g.units(groups, m)
	if err != nil {
		return rl.Batch{}, err
	}
	g.last, g.loss = units, g.Loss()
	if len(units) == 0 {
		return rl.Batch{Loss: g.loss, Metrics: m}, nil
	}
	if g.cfg.KLCoef > 0 {
		data := make([]rl.Datum, len(units))
		for i := range units {
			data[i] = units[i].datum
		}
		base, err := g.base.BaseLogprobs(ctx, data)
		if err != nil {
			return rl.Batch{}, fmt.Errorf("algo: KL penalty: %w", err)
		}
		v1, v2, err := klShape(units, base, g.cfg.KLCoef, g.cfg.KLDiscount)
		if err != nil {
			return rl.Batch{}, err
		}
		m["kl:policy_base"] = v1
		m["kl:policy_base_v2"] = v2
	}
	advStats(units, m)
	b := rl.Batch{Datums: make([]rl.Datum, len(units)), Loss: g.loss, Metrics: m}
	for i := range units {
		b.Datums[i] = units[i].datum
	}
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
	b.Actions = make([]rl.Span, len(units))
	for i, u := range units {
		b.Actions[i] = rl.Span{Datum: i, Start: u.start, End: u.end}
	}
	return b, nil
}

// units computes advantages, filters uniform groups and builds one unit per
// transition.
func (g *GRPO) units(groups []rl.Group, m map[string]float64) ([]unit, error) {
	uniform := make([]bool, len(groups))
	filtered := 0
	for gi := range groups {
		g.rets = g.rets[:0]
		for ti := range groups[gi].Trajectories {
			g.rets = append(g.rets, groups[gi].Trajectories[ti].Return())
		}
		_, uniform[gi] = GroupAdvantages(nil, g.rets, false)
		if uniform[gi] {
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
	var units []unit
	for gi := range groups {
		if uniform[gi] && !keepAll {
			continue
		}
		grp := &groups[gi]
		g.rets = g.rets[:0]
		for ti := range grp.Trajectories {
			g.rets = append(g.rets, grp.Trajectories[ti].Return())
		}
		g.adv, _ = GroupAdvantages(g.adv, g.rets, g.cfg.NormalizeStd)
		for ti := range grp.Trajectories {
			for k := range grp.Trajectories[ti].Transitions {
				u, ok, err := newUnit(&grp.Trajectories[ti].Transitions[k], g.adv[ti])
				if err != nil {
					return nil, fmt.Errorf("algo: group %d (id %d) trajectory %d turn %d: %w", gi, grp.ID, ti, k, err)
				}
				if ok {
					units = append(units, u)
				}
			}
		}
	}
	return units, nil
}

// advStats records advantage statistics over action tokens.
func advStats(units []unit, m map[string]float64) {
	var sum, sq, abs float64
	lo, hi := math.Inf(1), math.Inf(-1)
	n := 0
	for i := range units {
		for _, a := range units[i].adv[units[i].start:units[i].end] {
			sum += a
			sq += a * a
			abs += math.Abs(a)
			lo, hi = min(lo, a), max(hi, a)
			n++
		}
	}
	if n == 0 {
		return
	}
	mean := sum / float64(n)
	m["advantage:mean"] = mean
	m["advantage:abs_mean"] = abs / float64(n)
	m["advantage:std"] = math.Sqrt(max(sq/float64(n)-mean*mean, 0))
	m["advantage:min"], m["advantage:max"] = lo, hi
	m["tokens:action"] = float64(n)
}

// decouple runs the proximal forward pass and rewrites the datums for
// AReaL's decoupled loss: "logprobs" := log π_prox, and each action token's
// advantage A becomes A·w with w = π_prox/μ, or 0 when w exceeds the cap.
// The per-token loss −min(r'·A·w, clip(r')·A·w), r' = π_θ/π_prox, equals
// AReaL's −w·min(r'·A, clip(r')·A) because w > 0.
func (g *GRPO) decouple(ctx context.Context, t rl.Trainer, data []rl.Datum, m map[string]float64) error {
	proxes, prepared, err := g.proximal(ctx, t, data)
	if err != nil {
		return err
	}
	if prepared {
		m["decoupled:prepared"] = 1
	}
	lo, hi := 1-g.cfg.ClipEpsLow, 1+g.cfg.ClipEpsHigh
	var wSum, wMax, klSum, gapSum float64
	var n, capped, outside int
	for i := range g.last {
		u := &g.last[i]
		p := proxes[i]
		prox := make([]float64, len(u.mu))
		for k := u.start; k < u.end; k++ {
			prox[k] = p[k]
			w := math.Exp(p[k] - u.mu[k])
			n++
			wSum += w
			wMax = max(wMax, w)
			klSum += u.mu[k] - p[k]
			gapSum += math.Abs(u.mu[k] - p[k])
			if w < lo || w > hi {
				outside++
			}
			if g.cfg.BehaviourCap > 0 && w > g.cfg.BehaviourCap {
				capped++
				u.adv[k] = 0
				continue
			}
			u.adv[k] *= w
		}
		data[i].LossFnInputs[rl.InputLogprobs] = rl.TensorData{DType: rl.Float32, Floats: prox}
	}
	if n > 0 {
		fn := float64(n)
		m["decoupled:behav_weight_mean"] = wSum / fn
		m["decoupled:behav_weight_max"] = wMax
		m["decoupled:behav_kl"] = klSum / fn
		m["decoupled:sampler_gap"] = gapSum / fn
		m["decoupled:capped_frac"] = float64(capped) / fn
		m["decoupled:outside_clip_frac"] = float64(outside) / fn
	}
	return nil
}

// proximal returns π_prox's log-prob at every position of every datum of
// the last batch: from Prepare when it covered every datum, else from one
// forward pass over the batch.
func (g *GRPO) proximal(ctx context.Context, t rl.Trainer, data []rl.Datum) (_ [][]float64, prepared bool, _ error) {
	out := make([][]float64, len(g.last))
	all := g.prepared != nil
	for i := range g.last {
		p, ok := g.prepared[g.last[i].src]
		if !ok || len(p) != len(g.last[i].mu) {
			all = false
			break
		}
		out[i] = p
	}
	if all {
		for i := range g.last {
			delete(g.prepared, g.last[i].src)
		}
		return out, true, nil
	}
	if t == nil {
		return nil, false, errors.New("algo: decoupled objective needs the trainer for its proximal forward pass")
	}
	res, err := t.Forward(ctx, data, g.loss).Wait(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("algo: decoupled: proximal forward pass: %w", err)
	}
	if len(res.LossFnOutputs) != len(data) {
		return nil, false, fmt.Errorf("algo: decoupled: proximal forward pass returned %d outputs for %d datums", len(res.LossFnOutputs), len(data))
	}
	for i := range out {
		out[i] = res.LossFnOutputs[i][rl.InputLogprobs].Floats
		if len(out[i]) != len(g.last[i].mu) {
			return nil, false, fmt.Errorf("algo: decoupled: proximal forward pass gave %d log-probs for datum %d of %d positions", len(out[i]), i, len(g.last[i].mu))
		}
	}
	return out, false, nil
}

// OutputMetrics implements rl.OutputMetrics with RatioMetrics.
func (g *GRPO) OutputMetrics(out rl.ForwardBackwardOutput) (map[string]float64, error) {
	return g.RatioMetrics(out)
}

// Prepare computes, for the decoupled objective, the proximal policy of a
// whole learner step before the loop splits its groups into substeps, as
// AReaL does: one Trainer.Forward over every group, so that the substeps
// after the first clip against the policy of the step's start rather than
// against a policy recomputed after each optimizer step. Later Batch calls
// over these groups (or sub-slices of them, sharing their memory) use the
// stored log-probs instead of a forward pass of their own; Prepare replaces
// whatever an earlier call stored. For the other objectives it does
// nothing. A loop that never calls Prepare gets one forward pass per Batch.
func (g *GRPO) Prepare(ctx context.Context, t rl.Trainer, _ policy.Version, groups []rl.Group) error {
	if g.cfg.Objective != Decoupled {
		return nil
	}
	g.prepared = nil
	var units []unit
	var data []rl.Datum
	for gi := range groups {
		for ti := range groups[gi].Trajectories {
			trs := groups[gi].Trajectories[ti].Transitions
			for k := range trs {
				u, ok, err := newUnit(&trs[k], 0)
				if err != nil {
					return fmt.Errorf("algo: prepare: group %d (id %d) trajectory %d turn %d: %w", gi, groups[gi].ID, ti, k, err)
				}
				if ok {
					units = append(units, u)
					data = append(data, u.datum)
				}
			}
		}
	}
	if len(data) == 0 {
		return nil
	}
	if t == nil {
		return errors.New("algo: decoupled objective needs the trainer for its proximal forward pass")
	}
	res, err := t.Forward(ctx, data, g.Loss()).Wait(ctx)
	if err != nil {
		return fmt.Errorf("algo: prepare: proximal forward pass: %w", err)
	}
	if len(res.LossFnOutputs) != len(data) {
		return fmt.Errorf("algo: prepare: proximal forward pass returned %d outputs for %d datums", len(res.LossFnOutputs), len(data))
	}
	g.prepared = make(map[*rl.Transition][]float64, len(units))
	for i, u := range units {
		g.prepared[u.src] = res.LossFnOutputs[i][rl.InputLogprobs].Floats
	}
	return nil
}
