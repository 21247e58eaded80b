package algo

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// decouple runs the proximal forward pass and rewrites the last batch's
// datums in place for AReaL's decoupled loss: "logprobs" := log π_prox, and
// each action token's advantage A becomes A·w with w = π_prox/μ, or 0 when w
// exceeds the cap. data, the datums of g.last in order, go to the forward
// pass.
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
		for k := u.start; k < u.end; k++ {
			w := math.Exp(p[k] - u.mu[k])
			n++
			wSum += w
			wMax = max(wMax, w)
			klSum += u.mu[k] - p[k]
			gapSum += math.Abs(u.mu[k] - p[k])
			// The "logprobs" input is u.mu (the builder wrote it there and
			// in no other slice): overwriting it keeps the datum's map as
			// the builder left it, for its next batch.
			u.mu[k] = p[k]
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
	g.prep.reset()
	for gi := range groups {
		for ti := range groups[gi].Trajectories {
			trs := groups[gi].Trajectories[ti].Transitions
			for k := range trs {
				if err := g.prep.add(&trs[k], 0); err != nil {
					return fmt.Errorf("algo: prepare: group %d (id %d) trajectory %d turn %d: %w", gi, groups[gi].ID, ti, k, err)
				}
			}
		}
	}
	units, data, _ := g.prep.batch()
	if len(units) == 0 {
		return nil
	}
	if t == nil {
		return errors.New("algo: decoupled objective needs the trainer for its proximal forward pass")
	}
	res, err := t.Forward(ctx, data, g.loss).Wait(ctx)
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
