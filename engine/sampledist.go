package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tandemrl/tandem/engine/kernels"
)

// SamplingParams control generation: the engine's form of rl.SamplingParams,
// with a plain seed and a Validate that knows the vocabulary (backend/local
// converts one to the other). Temperature 0 is greedy decoding; TopK ≤ 0
// means no top-k cut; TopP 0 or 1 means no nucleus cut. Seed fixes the
// random stream: the same seed, prompt, weights and params give the same
// tokens and log-probs (sample i of n draws from its own stream, seeded by
// (Seed, i)). Generation stops after MaxTokens tokens, at the end of the
// context, or after a stop token or stop string is produced (it is included
// in the output). EOS is not a stop token unless listed.
type SamplingParams struct {
	MaxTokens      int
	Temperature    float64
	TopK           int
	TopP           float64
	Seed           int64
	StopStrings    []string
	StopTokens     []int
	PromptLogprobs bool // also return the log-prob of each prompt token
}

// Validate checks every field's range against a model of shape cfg.
func (p SamplingParams) Validate(cfg Config) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: sampling: %s", ErrInput, fmt.Sprintf(format, a...))
	}
	switch {
	case p.MaxTokens <= 0:
		return bad("max_tokens %d must be positive", p.MaxTokens)
	case !(p.Temperature >= 0) || math.IsInf(p.Temperature, 0):
		return bad("temperature %v must be a non-negative finite number (0 is greedy)", p.Temperature)
	case !(p.TopP >= 0 && p.TopP <= 1):
		return bad("top_p %v must be in [0, 1] (0 or 1: no nucleus cut)", p.TopP)
	}
	for i, s := range p.StopStrings {
		if s == "" {
			return bad("stop string %d is empty", i)
		}
	}
	for i, t := range p.StopTokens {
		if t < 0 || t >= cfg.Vocab {
			return bad("stop token %d (index %d) is outside the vocabulary [0, %d)", t, i, cfg.Vocab)
		}
	}
	return nil
}

// StopReason says why a sequence ended.
type StopReason string

const (
	StopLength StopReason = "length" // max_tokens or the context's end reached
	StopStop   StopReason = "stop"   // a stop token or stop string produced
)

// Sequence is one sampled completion.
type Sequence struct {
	Tokens []int
	// Logprobs[i] is the log-probability of Tokens[i] under the distribution
	// it was drawn from: after temperature, top-k and top-p, renormalized.
	// Under greedy decoding (temperature 0) it is the model's plain
	// log-softmax of the chosen token.
	Logprobs   []float64
	StopReason StopReason
}

// chooser draws tokens from logit rows; it owns scratch buffers and is used
// by one goroutine.
type chooser struct {
	p     SamplingParams
	z     []float64
	order []int
}

// choose draws a token from logits with rng and returns it with its
// log-probability under the distribution drawn from.
func choose[T Float](c *chooser, logits []T, rng *rand.Rand) (int, float64) {
	v := len(logits)
	c.z = slices.Grow(c.z[:0], v)[:v]
	if c.p.Temperature == 0 {
		best := 0
		for i, x := range logits {
			c.z[i] = float64(x)
			if x > logits[best] {
				best = i
			}
		}
		return best, c.z[best] - lseF(c.z)
	}
	inv := 1 / c.p.Temperature
	for i, x := range logits {
		c.z[i] = float64(x) * inv
	}
	lse := lseF(c.z)
	truncK := c.p.TopK > 0 && c.p.TopK < v
	truncP := c.p.TopP > 0 && c.p.TopP < 1
	if !truncK && !truncP {
		u := rng.Float64()
		acc := 0.0
		last := 0
		for i, zi := range c.z {
			pi := math.Exp(zi - lse)
			if pi > 0 {
				last = i
			}
			acc += pi
			if u < acc {
				return i, zi - lse
			}
		}
		return last, c.z[last] - lse // rounding left u above the total
	}
	// Sort by probability, highest first (ties: lower id first), then cut.
	c.order = slices.Grow(c.order[:0], v)[:v]
	for i := range c.order {
		c.order[i] = i
	}
	z := c.z
	slices.SortStableFunc(c.order, func(a, b int) int {
		switch {
		case z[a] > z[b]:
			return -1
		case z[a] < z[b]:
			return 1
		}
		return 0
	})
	keep := v
	if truncK {
		keep = c.p.TopK
	}
	// Mass of the kept prefix (top-k renormalized), then the nucleus cut.
	var mass float64
	for _, i := range c.order[:keep] {
		mass += math.Exp(z[i] - lse)
	}
	if truncP {
		var acc float64
		for j, i := range c.order[:keep] {
			acc += math.Exp(z[i]-lse) / mass
			if acc >= c.p.TopP {
				keep = j + 1
				break
			}
		}
		mass = 0
		for _, i := range c.order[:keep] {
			mass += math.Exp(z[i] - lse)
		}
	}
	logMass := math.Log(mass)
	u := rng.Float64() * mass
	acc := 0.0
	for _, i := range c.order[:keep] {
		acc += math.Exp(z[i] - lse)
		if u < acc {
			return i, z[i] - lse - logMass
		}
	}
	i := c.order[keep-1]
	return i, z[i] - lse - logMass
}

// lseF is the log-sum-exp of z, the exponentials kernels.ExpShiftSum64's.
func lseF(z []float64) float64 {
	mx := maxScore(z)
	return mx + math.Log(kernels.ExpShiftSum64(z, mx))
}
