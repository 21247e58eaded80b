package sft

import (
	"fmt"
	"math"
)

// Decay is the shape of the learning rate after warm-up.
type Decay string

const (
	Constant Decay = "constant" // the peak rate throughout (the default)
	Linear   Decay = "linear"   // straight down to MinFactor × peak
	Cosine   Decay = "cosine"   // half a cosine down to MinFactor × peak
)

// Schedule scales the peak learning rate step by step: a linear warm-up
// over WarmupSteps steps, then Decay over the remaining steps. The zero
// value is a constant rate.
type Schedule struct {
	WarmupSteps int   `json:"warmup_steps,omitempty"`
	Decay       Decay `json:"decay,omitempty"`
	// MinFactor is the floor of the decay as a fraction of the peak, in
	// [0, 1] (default 0).
	MinFactor float64 `json:"min_factor,omitempty"`
}

// Validate checks every field.
func (s Schedule) Validate() error {
	switch s.Decay {
	case "", Constant, Linear, Cosine:
	default:
		return fmt.Errorf("%w: Schedule.Decay is %q; allowed: constant, linear, cosine", ErrConfig, s.Decay)
	}
	if s.WarmupSteps < 0 {
		return fmt.Errorf("%w: Schedule.WarmupSteps is %d; must be ≥ 0", ErrConfig, s.WarmupSteps)
	}
	if !(s.MinFactor >= 0 && s.MinFactor <= 1) {
		return fmt.Errorf("%w: Schedule.MinFactor is %v; must be in [0, 1]", ErrConfig, s.MinFactor)
	}
	return nil
}

// Factor returns the multiplier of the peak rate at step (0-based) of a run
// of total steps. During warm-up it is (step+1)/WarmupSteps, so the first
// step already moves; after it, with progress x = (step − WarmupSteps) /
// (total − WarmupSteps) in [0, 1), linear gives m + (1−m)(1−x) and cosine
// m + (1−m)(1+cos πx)/2, m being MinFactor. The last step therefore keeps a
// small positive rate.
func (s Schedule) Factor(step, total int) float64 {
	if step < s.WarmupSteps {
		return float64(step+1) / float64(s.WarmupSteps)
	}
	if s.Decay == "" || s.Decay == Constant || total <= s.WarmupSteps {
		return 1
	}
	x := float64(step-s.WarmupSteps) / float64(total-s.WarmupSteps)
	x = min(max(x, 0), 1)
	m := s.MinFactor
	if s.Decay == Linear {
		return m + (1-m)*(1-x)
	}
	return m + (1-m)*(1+math.Cos(math.Pi*x))/2
}
