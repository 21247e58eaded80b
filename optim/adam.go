// Package optim defines the optimizer settings shared by the training
// contracts (package rl, and through it the wire protocol) and the embedded
// engine: one AdamParams, with its defaults and valid ranges, that both
// packages alias, so there is one source of truth and no conversion.
package optim

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalid is wrapped by every error AdamParams.Validate returns.
var ErrInvalid = errors.New("adam: invalid params")

// Defaults of AdamParams' zero fields (Tinker's AdamParams defaults).
const (
	DefaultLearningRate = 1e-4
	DefaultBeta1        = 0.9
	DefaultBeta2        = 0.95
	DefaultEps          = 1e-12
)

// AdamParams are the settings of one AdamW step, with Tinker's semantics. A
// zero field means its default: LearningRate 1e-4, Beta1 0.9, Beta2 0.95,
// Eps 1e-12, WeightDecay 0, GradClipNorm 0 (no clipping). WeightDecay is
// decoupled (AdamW) and scaled by the learning rate; GradClipNorm clips the
// global gradient norm before the step.
type AdamParams struct {
	LearningRate float64 `json:"learning_rate"`
	Beta1        float64 `json:"beta1"`
	Beta2        float64 `json:"beta2"`
	Eps          float64 `json:"eps"`
	WeightDecay  float64 `json:"weight_decay"`
	GradClipNorm float64 `json:"grad_clip_norm"`
}

// WithDefaults returns p with zero fields replaced by their defaults.
func (p AdamParams) WithDefaults() AdamParams {
	if p.LearningRate == 0 {
		p.LearningRate = DefaultLearningRate
	}
	if p.Beta1 == 0 {
		p.Beta1 = DefaultBeta1
	}
	if p.Beta2 == 0 {
		p.Beta2 = DefaultBeta2
	}
	if p.Eps == 0 {
		p.Eps = DefaultEps
	}
	return p
}

// Validate checks every field's range after defaults; the error wraps
// ErrInvalid and names the field, its value and the range allowed.
func (p AdamParams) Validate() error {
	p = p.WithDefaults()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	switch {
	case !(p.LearningRate > 0) || math.IsInf(p.LearningRate, 0):
		return bad("learning_rate %v must be a positive finite number", p.LearningRate)
	case !(p.Beta1 >= 0 && p.Beta1 < 1):
		return bad("beta1 %v must be in [0, 1)", p.Beta1)
	case !(p.Beta2 >= 0 && p.Beta2 < 1):
		return bad("beta2 %v must be in [0, 1)", p.Beta2)
	case !(p.Eps > 0) || math.IsInf(p.Eps, 0):
		return bad("eps %v must be a positive finite number", p.Eps)
	case !(p.WeightDecay >= 0) || math.IsInf(p.WeightDecay, 0):
		return bad("weight_decay %v must be a non-negative finite number", p.WeightDecay)
	case !(p.GradClipNorm >= 0) || math.IsInf(p.GradClipNorm, 0):
		return bad("grad_clip_norm %v must be a non-negative finite number (0 disables clipping)", p.GradClipNorm)
	}
	return nil
}
