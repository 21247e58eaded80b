package engine

import (
	"fmt"
	"math"
)

// AdamParams are the settings of one AdamW step, with Tinker's semantics. A
// zero field means its default: LearningRate 1e-4, Beta1 0.9, Beta2 0.95,
// Eps 1e-12, WeightDecay 0, GradClipNorm 0 (no clipping).
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
		p.LearningRate = 1e-4
	}
	if p.Beta1 == 0 {
		p.Beta1 = 0.9
	}
	if p.Beta2 == 0 {
		p.Beta2 = 0.95
	}
	if p.Eps == 0 {
		p.Eps = 1e-12
	}
	return p
}

// Validate checks every field's range (after defaults).
func (p AdamParams) Validate() error {
	p = p.WithDefaults()
	switch {
	case !(p.LearningRate > 0) || math.IsInf(p.LearningRate, 0):
		return fmt.Errorf("%w: adam learning_rate %v must be a positive finite number", ErrConfig, p.LearningRate)
	case !(p.Beta1 >= 0 && p.Beta1 < 1):
		return fmt.Errorf("%w: adam beta1 %v must be in [0, 1)", ErrConfig, p.Beta1)
	case !(p.Beta2 >= 0 && p.Beta2 < 1):
		return fmt.Errorf("%w: adam beta2 %v must be in [0, 1)", ErrConfig, p.Beta2)
	case !(p.Eps > 0) || math.IsInf(p.Eps, 0):
		return fmt.Errorf("%w: adam eps %v must be a positive finite number", ErrConfig, p.Eps)
	case !(p.WeightDecay >= 0) || math.IsInf(p.WeightDecay, 0):
		return fmt.Errorf("%w: adam weight_decay %v must be a non-negative finite number", ErrConfig, p.WeightDecay)
	case !(p.GradClipNorm >= 0) || math.IsInf(p.GradClipNorm, 0):
		return fmt.Errorf("%w: adam grad_clip_norm %v must be a non-negative finite number (0 disables clipping)", ErrConfig, p.GradClipNorm)
	}
	return nil
}

// param is one trainable tensor with its gradient and Adam moments.
type param[T Float] struct {
	name  string
	shape []int
	w, g  []T
	m, v  []T
}

// gradNorm returns the global L2 norm of all gradients, summed in float64 in
// a fixed order.
func gradNorm[T Float](ps []param[T]) float64 {
	var s float64
	for _, p := range ps {
		for _, g := range p.g {
			s += float64(g) * float64(g)
		}
	}
	return math.Sqrt(s)
}

// adamStep applies one AdamW step (step is the 1-based step number) to every
// param and clears the gradients. It returns the gradient norm before
// clipping. Per element, with g scaled by min(1, clip/‖g‖):
//
//	m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//	w ← w·(1 − lr·wd) − lr·(m/(1−β1^t)) / (√(v/(1−β2^t)) + eps)
func adamStep[T Float](ps []param[T], p AdamParams, step int) float64 {
	p = p.WithDefaults()
	norm := gradNorm(ps)
	scale := 1.0
	if p.GradClipNorm > 0 && norm > p.GradClipNorm {
		scale = p.GradClipNorm / norm
	}
	bc1 := 1 - math.Pow(p.Beta1, float64(step))
	bc2 := 1 - math.Pow(p.Beta2, float64(step))
	decay := 1 - p.LearningRate*p.WeightDecay
	for _, pr := range ps {
		for i := range pr.w {
			g := float64(pr.g[i]) * scale
			m := p.Beta1*float64(pr.m[i]) + (1-p.Beta1)*g
			v := p.Beta2*float64(pr.v[i]) + (1-p.Beta2)*g*g
			pr.m[i], pr.v[i] = T(m), T(v)
			w := float64(pr.w[i]) * decay
			w -= p.LearningRate * (m / bc1) / (math.Sqrt(v/bc2) + p.Eps)
			pr.w[i] = T(w)
		}
		clear(pr.g)
	}
	return norm
}
