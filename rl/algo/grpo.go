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
	prox [][]float64 // decoupled: π_prox log-probs of the last batch
	adv  []float64
	rets []float64
	loss rl.Loss
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
// batch, waited for before Batch returns.
func (g *GRPO) Batch(ctx context.Context, t rl.Trainer, _ policy.Version, groups []rl.Group) (rl.Batch, error) {
	m := make(map[string]float64, 16)
	units, err := g.units(groups, m)
	if err != nil {
		return rl.Batch{}, err
	}
	g.last, g.prox, g.loss = units, nil, g.Loss()
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
		// the sampler/trainer gap is in Metrics["decoupled:sampler_gap"].
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
	if t == nil {
		return errors.New("algo: decoupled objective needs the trainer for its proximal forward pass")
	}
	out, err := t.Forward(ctx, data, g.loss).Wait(ctx)
	if err != nil {
		return fmt.Errorf("algo: decoupled: proximal forward pass: %w", err)
	}
	if len(out.LossFnOutputs) != len(data) {
		return fmt.Errorf("algo: decoupled: proximal forward pass returned %d outputs for %d datums", len(out.LossFnOutputs), len(data))
	}
	lo, hi := 1-g.cfg.ClipEpsLow, 1+g.cfg.ClipEpsHigh
	var wSum, wMax, klSum, gapSum float64
	var n, capped, outside int
	g.prox = make([][]float64, len(data))
	for i := range g.last {
		u := &g.last[i]
		p := out.LossFnOutputs[i][rl.InputLogprobs].Floats
		if len(p) != len(u.mu) {
			return fmt.Errorf("algo: decoupled: proximal forward pass gave %d log-probs for datum %d of %d positions", len(p), i, len(u.mu))
		}
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
		g.prox[i] = prox
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
