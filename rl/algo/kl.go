package algo

import (
	"context"
	"errors"
	"fmt"

	"github.com/sourcegraph/conc/pool"

	"github.com/tandemrl/tandem/rl"
)

// BaseModel scores datums under the base model with the adapter off: for
// each datum, the log-prob of every target token (one value per input
// position, as a trainer's "logprobs" output). GRPO calls it once per batch
// when the KL penalty is on; it may block.
type BaseModel interface {
	BaseLogprobs(ctx context.Context, data []rl.Datum) ([][]float64, error)
}

// ErrNotBase is returned by SamplerBase when its sampler serves a trained
// version rather than the base.
var ErrNotBase = errors.New("algo: sampler does not serve the base model")

// SamplerBase implements BaseModel with any rl.Sampler that serves the base
// model (version 0: a fresh adapter): it asks for the prompt log-probs of
// each datum's full sequence (input plus last target) and generates one
// token it throws away, so the sampler's context must hold the sequence
// plus one token. Cost: one prefill per datum.
type SamplerBase struct {
	Sampler rl.Sampler
	// Parallel bounds the concurrent Sample calls (default 1).
	Parallel int
}

// BaseLogprobs implements BaseModel. It runs at most Parallel Sample calls
// at once; the first error cancels the calls still running, is returned
// (naming its datum) and leaves no goroutine behind.
func (s SamplerBase) BaseLogprobs(ctx context.Context, data []rl.Datum) ([][]float64, error) {
	out := make([][]float64, len(data))
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().
		WithMaxGoroutines(max(1, min(s.Parallel, len(data))))
	for i := range data {
		p.Go(func(ctx context.Context) error {
			if ctx.Err() != nil {
				return context.Cause(ctx) // the caller's ctx ended, or an earlier datum failed
			}
			lp, err := s.one(ctx, &data[i])
			if err != nil {
				return fmt.Errorf("datum %d: %w", i, err)
			}
			out[i] = lp
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return nil, fmt.Errorf("algo: base log-probs: %w", err)
	}
	return out, nil
}

func (s SamplerBase) one(ctx context.Context, d *rl.Datum) ([]float64, error) {
	tg := d.LossFnInputs[rl.InputTargetTokens].Ints
	in := d.ModelInput.AllTokens()
	if len(tg) != len(in) || len(in) == 0 {
		return nil, fmt.Errorf("%d target tokens for %d input tokens", len(tg), len(in))
	}
	full := append(in, int(tg[len(tg)-1]))
	seed := int64(0)
	o, err := s.Sampler.Sample(ctx, rl.Tokens(full), 1, rl.SamplingParams{MaxTokens: 1, Temperature: 1, Seed: &seed, PromptLogprobs: true})
	if err != nil {
		return nil, err
	}
	if o.Version != 0 {
		return nil, fmt.Errorf("%w: it serves version %d", ErrNotBase, o.Version)
	}
	if len(o.PromptLogprobs) != len(full) {
		return nil, fmt.Errorf("sampler returned %d prompt log-probs for %d prompt tokens", len(o.PromptLogprobs), len(full))
	}
	// PromptLogprobs[i] scores full[i] given full[:i]; position p's target
	// is full[p+1].
	return o.PromptLogprobs[1:], nil
}

// klShape applies tinker-cookbook's KL penalty to the units' advantages in
// place: d_t = μ_t − base_t on action positions, d̄ = their mean over the
// batch, and each action position's advantage gains β·(d̄ − d_t), as a
// discounted sum over the positions after it when gamma > 0. It returns d̄
// (the v1 estimate of KL(μ‖base)) and ½·mean(d²) (the v2 estimate).
func klShape(units []unit, base [][]float64, beta, gamma float64) (v1, v2 float64, err error) {
	if len(base) != len(units) {
		return 0, 0, fmt.Errorf("algo: base model scored %d datums; want %d", len(base), len(units))
	}
	var sum, sq float64
	n := 0
	for i := range units {
		u := &units[i]
		if len(base[i]) != len(u.mu) {
			return 0, 0, fmt.Errorf("algo: base model gave %d log-probs for datum %d of %d positions", len(base[i]), i, len(u.mu))
		}
		for p := u.start; p < u.end; p++ {
			d := u.mu[p] - base[i][p]
			if !finite(d) {
				return 0, 0, fmt.Errorf("algo: datum %d position %d: log μ − log π_base = %v is not finite", i, p, d)
			}
			sum += d
			sq += d * d
			n++
		}
	}
	if n == 0 {
		return 0, 0, nil
	}
	v1, v2 = sum/float64(n), 0.5*sq/float64(n)
	var pen []float64
	for i := range units {
		u := &units[i]
		pen = pen[:0]
		for p := u.start; p < u.end; p++ {
			pen = append(pen, beta*(v1-(u.mu[p]-base[i][p])))
		}
		if gamma > 0 {
			run := 0.0
			for j := len(pen) - 1; j >= 0; j-- {
				run = pen[j] + gamma*run
				pen[j] = run
			}
		}
		for j, v := range pen {
			u.adv[u.start+j] += v
		}
	}
	return v1, v2, nil
}
