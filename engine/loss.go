package engine

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// LossName names a built-in per-token loss (Tinker's loss_fn).
type LossName string

// The built-in losses. Let p be the trainer's log-probability of a target
// token, q the sampler's (Example.Logprobs), r = exp(p − q), A the advantage
// and w the weight. Each token contributes the loss below; the total is the
// plain sum over every token of every example, with no normalization.
const (
	CrossEntropy       LossName = "cross_entropy"       // −w·p
	ImportanceSampling LossName = "importance_sampling" // −r·A
	PPO                LossName = "ppo"                 // −min(r·A, clip(r, lo, hi)·A); lo, hi default 0.8, 1.2
	CISPO              LossName = "cispo"               // −sg(clip(r, lo, hi))·A·p; lo, hi default 0, 4
	DRO                LossName = "dro"                 // −(p·A − ½·β·(p − q)²); β defaults to 0.05
)

// Loss configuration keys (Tinker's loss_fn_config). Package rl holds the
// protocol's definition (rl.ClipLowThreshold, rl.ClipHighThreshold,
// rl.DROBeta); the engine, below rl, spells them again, and backend/local's
// tests check that both agree.
const (
	ClipLow  = "clip_low_threshold"
	ClipHigh = "clip_high_threshold"
	Beta     = "beta"
)

// LossSpec selects a loss and its configuration. Config keys a loss does not
// know are an error.
type LossSpec struct {
	Name   LossName
	Config map[string]float64
}

// Example is one training sequence. Input are the model's input tokens;
// Targets[i] is the token to predict after Input[:i+1] (already shifted by
// the caller). The per-token loss inputs have one value per input token:
// Weights for cross_entropy (nil means all ones), Logprobs (the sampler's q)
// and Advantages for the RL losses. The engine does not keep the slices.
type Example struct {
	Input      []int
	Targets    []int
	Weights    []float64
	Logprobs   []float64
	Advantages []float64
}

// lossFn is a compiled loss: for token t with trainer log-prob p it returns
// the token's loss and its derivative with respect to p.
type lossFn func(ex *Example, t int, p float64) (loss, dp float64)

// compile checks spec and returns its per-token function.
func (spec LossSpec) compile() (lossFn, error) {
	cfg := map[string]float64{}
	allowed := map[LossName][]string{
		CrossEntropy: nil, ImportanceSampling: nil,
		PPO: {ClipLow, ClipHigh}, CISPO: {ClipLow, ClipHigh}, DRO: {Beta},
	}
	keys, ok := allowed[spec.Name]
	if !ok {
		names := make([]string, 0, len(allowed))
		for n := range allowed {
			names = append(names, string(n))
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w: unknown loss %q; want one of %s", ErrLoss, spec.Name, strings.Join(names, ", "))
	}
	for k, v := range spec.Config {
		if !slices.Contains(keys, k) {
			return nil, fmt.Errorf("%w: loss %s has no config key %q (allowed: %v)", ErrLoss, spec.Name, k, keys)
		}
		if !isFinite(v) {
			return nil, fmt.Errorf("%w: loss %s config %s = %v must be finite", ErrLoss, spec.Name, k, v)
		}
		cfg[k] = v
	}
	get := func(k string, def float64) float64 {
		if v, ok := cfg[k]; ok {
			return v
		}
		return def
	}
	switch spec.Name {
	case CrossEntropy:
		return func(ex *Example, t int, p float64) (float64, float64) {
			w := 1.0
			if ex.Weights != nil {
				w = ex.Weights[t]
			}
			return -w * p, -w
		}, nil
	case ImportanceSampling:
		return func(ex *Example, t int, p float64) (float64, float64) {
			ra := math.Exp(p-ex.Logprobs[t]) * ex.Advantages[t]
			return -ra, -ra
		}, nil
	case PPO, CISPO:
		def := map[LossName][2]float64{PPO: {0.8, 1.2}, CISPO: {0, 4}}[spec.Name]
		lo, hi := get(ClipLow, def[0]), get(ClipHigh, def[1])
		if !(lo >= 0 && lo <= hi) {
			return nil, fmt.Errorf("%w: loss %s needs 0 ≤ %s ≤ %s, got %v and %v", ErrLoss, spec.Name, ClipLow, ClipHigh, lo, hi)
		}
		if spec.Name == CISPO {
			return func(ex *Example, t int, p float64) (float64, float64) {
				c := min(max(math.Exp(p-ex.Logprobs[t]), lo), hi) * ex.Advantages[t]
				return -c * p, -c
			}, nil
		}
		return func(ex *Example, t int, p float64) (float64, float64) {
			a := ex.Advantages[t]
			r := math.Exp(p - ex.Logprobs[t])
			unclipped, clipped := r*a, min(max(r, lo), hi)*a
			if unclipped <= clipped {
				return -unclipped, -unclipped
			}
			return -clipped, 0
		}, nil
	case DRO:
		beta := get(Beta, 0.05)
		if beta < 0 {
			return nil, fmt.Errorf("%w: loss dro needs beta ≥ 0, got %v", ErrLoss, beta)
		}
		return func(ex *Example, t int, p float64) (float64, float64) {
			a, dq := ex.Advantages[t], p-ex.Logprobs[t]
			return -(p*a - 0.5*beta*dq*dq), -a + beta*dq
		}, nil
	}
	panic("unreachable")
}

// validate checks one example against the model and the loss.
func (ex *Example) validate(cfg Config, loss LossName, idx int) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: example %d: %s", ErrInput, idx, fmt.Sprintf(format, a...))
	}
	n := len(ex.Input)
	if n == 0 {
		return bad("input is empty")
	}
	if n > cfg.Context {
		return bad("input has %d tokens; the model's context is %d", n, cfg.Context)
	}
	if err := checkTokens(ex.Input, cfg.Vocab); err != nil {
		return bad("input: %v", err)
	}
	if len(ex.Targets) != n {
		return bad("target_tokens has %d values; want one per input token (%d)", len(ex.Targets), n)
	}
	if err := checkTokens(ex.Targets, cfg.Vocab); err != nil {
		return bad("target_tokens: %v", err)
	}
	floats := func(name string, v []float64, required bool) error {
		if v == nil && !required {
			return nil
		}
		if len(v) != n {
			return bad("%s has %d values; want one per input token (%d)", name, len(v), n)
		}
		for i, x := range v {
			if !isFinite(x) {
				return bad("%s[%d] is %v; values must be finite", name, i, x)
			}
		}
		return nil
	}
	if loss == CrossEntropy {
		if ex.Logprobs != nil || ex.Advantages != nil {
			return bad("loss cross_entropy takes target_tokens and weights only; logprobs/advantages given")
		}
		return floats("weights", ex.Weights, false)
	}
	if ex.Weights != nil {
		return bad("loss %s takes target_tokens, logprobs and advantages; weights given (mask with zero advantages)", loss)
	}
	if err := floats("logprobs", ex.Logprobs, true); err != nil {
		return err
	}
	return floats("advantages", ex.Advantages, true)
}

func checkTokens(toks []int, vocab int) error {
	for i, t := range toks {
		if t < 0 || t >= vocab {
			return fmt.Errorf("token %d at position %d is outside the vocabulary [0, %d)", t, i, vocab)
		}
	}
	return nil
}
