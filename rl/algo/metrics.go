package algo

import (
	"fmt"
	"math"

	"github.com/tandemrl/tandem/rl"
)

// RatioMetrics summarizes, from the trainer's forward-backward output of the
// last Batch, the importance ratio r = exp(p − q) over action tokens, q being
// the batch's "logprobs" input (the sampler's log-prob, or π_prox for
// decoupled): "ratio:mean", "ratio:max", and the share of tokens the
// objective's correction acted on: "ratio:clipped_frac" for ppo and
// decoupled (tokens whose gradient the clip zeroes: r above the upper bound
// with A > 0, or below the lower bound with A < 0) and "ratio:truncated_frac"
// for tis (r > C). It reads no more than the output and the last batch,
// whose memory GRPO reuses for the next (so out must come from the latest
// Batch); it costs one pass over the action tokens. An output with no
// per-token results (a trainer that skips them, as backend/sim can) gives
// no metrics and no error.
func (g *GRPO) RatioMetrics(out rl.ForwardBackwardOutput) (map[string]float64, error) {
	if len(out.LossFnOutputs) == 0 {
		return nil, nil // a trainer that reports no per-token outputs: nothing to measure
	}
	if len(out.LossFnOutputs) != len(g.last) {
		return nil, fmt.Errorf("algo: ratio metrics: %d outputs for a batch of %d datums", len(out.LossFnOutputs), len(g.last))
	}
	lo, hi := 1-g.cfg.ClipEpsLow, 1+g.cfg.ClipEpsHigh
	var sum, rmax float64
	var n, acted int
	for i := range g.last {
		u := &g.last[i]
		p := out.LossFnOutputs[i][rl.InputLogprobs].Floats
		q := u.mu // the datum's "logprobs" input
		if len(p) != len(q) {
			return nil, fmt.Errorf("algo: ratio metrics: datum %d has %d output log-probs for %d positions", i, len(p), len(q))
		}
		for k := u.start; k < u.end; k++ {
			r := math.Exp(p[k] - q[k])
			sum += r
			rmax = max(rmax, r)
			n++
			a := u.adv[k]
			switch g.cfg.Objective {
			case PPO, Decoupled:
				if (a > 0 && r > hi) || (a < 0 && r < lo) {
					acted++
				}
			case TIS:
				if r > g.cfg.TruncateAt {
					acted++
				}
			}
		}
	}
	m := map[string]float64{}
	if n == 0 {
		return m, nil
	}
	m["ratio:mean"] = sum / float64(n)
	m["ratio:max"] = rmax
	switch g.cfg.Objective {
	case PPO, Decoupled:
		m["ratio:clipped_frac"] = float64(acted) / float64(n)
	case TIS:
		m["ratio:truncated_frac"] = float64(acted) / float64(n)
	}
	return m, nil
}
