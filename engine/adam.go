package engine

import (
	"math"

	"github.com/tandemrl/tandem/optim"
)

// AdamParams are the settings of one AdamW step, with Tinker's semantics
// and defaults. The type is optim.AdamParams, the one definition that
// package rl aliases too (its rl.AdamParams), so the engine and the training
// contracts cannot disagree on a default or a range.
type AdamParams = optim.AdamParams

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
