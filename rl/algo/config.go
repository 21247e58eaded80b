package algo

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Objective selects the policy-gradient objective, i.e. how GRPO corrects
// for the gap between the behaviour policy that sampled the data and the
// policy being trained.
type Objective string

// The objectives, named as in the staleness benchmark.
const (
	// Naive is plain importance sampling: gradient r·A·∇p with r unbounded
	// (the trainer's importance_sampling loss).
	Naive Objective = "naive"
	// PPO clips r = π_θ/μ against the behaviour policy μ in
	// [1−ClipEpsLow, 1+ClipEpsHigh] (the trainer's ppo loss).
	PPO Objective = "ppo"
	// TIS is truncated importance sampling: gradient min(r, C)·A·∇p with
	// C = TruncateAt (the trainer's cispo loss with thresholds 0 and C).
	TIS Objective = "tis"
	// Decoupled is AReaL's decoupled PPO: the clip is taken against a
	// proximal policy recomputed by a forward pass before the update, and
	// each token is weighted by π_prox/μ.
	Decoupled Objective = "decoupled"
)

// Objectives lists every objective, in the benchmark's order.
func Objectives() []Objective { return []Objective{Naive, PPO, TIS, Decoupled} }

func objectiveNames() string {
	names := make([]string, 0, 4)
	for _, o := range Objectives() {
		names = append(names, string(o))
	}
	return strings.Join(names, ", ")
}

// ParseObjective returns the objective named s (case-sensitive).
func ParseObjective(s string) (Objective, error) {
	for _, o := range Objectives() {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("%w: objective %q unknown; allowed: %s", ErrConfig, s, objectiveNames())
}

// UnmarshalText implements encoding.TextUnmarshaler, so a JSON config with
// an unknown objective fails to decode with a message naming the allowed
// values.
func (o *Objective) UnmarshalText(b []byte) error {
	v, err := ParseObjective(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// ErrConfig is wrapped by every error Config.Validate returns.
var ErrConfig = errors.New("algo: invalid config")

// Config configures a GRPO: it is the one place where the objective (and
// with it the trainer's loss and the off-policy correction), advantage
// normalization, dynamic sampling and the KL penalty are set. How a learner
// step is split into optimizer steps is the loop's rl.Config.Substeps: the
// loop calls Batch once per substep. It is a plain serializable struct; a
// zero field means its documented default.
type Config struct {
	// Objective is naive (default), ppo, tis or decoupled.
	Objective Objective `json:"objective,omitempty"`
	// NormalizeStd divides each advantage by its group's standard deviation
	// (population form, plus 1e-6).
	NormalizeStd bool `json:"normalize_std,omitempty"`
	// KeepUniform keeps groups whose returns are all equal. By default they
	// are filtered out (dynamic sampling): their advantages are all zero.
	KeepUniform bool `json:"keep_uniform,omitempty"`
	// ClipEpsLow and ClipEpsHigh bound the ratio of ppo and decoupled to
	// [1−ClipEpsLow, 1+ClipEpsHigh]. Defaults 0.2 and 0.2 (the trainer's
	// 0.8 and 1.2); ClipEpsLow must be below 1.
	ClipEpsLow  float64 `json:"clip_eps_low,omitempty"`
	ClipEpsHigh float64 `json:"clip_eps_high,omitempty"`
	// TruncateAt is tis's C: the importance ratio is capped at C (default 2,
	// must be positive).
	TruncateAt float64 `json:"truncate_at,omitempty"`
	// BehaviourCap filters, in decoupled, tokens whose behaviour weight
	// π_prox/μ exceeds it (AReaL's behav_imp_weight_cap). 0 means the
	// default 5; a negative value disables the filter; otherwise it must
	// exceed 1.
	BehaviourCap float64 `json:"behaviour_cap,omitempty"`
	// KLCoef is β of the KL penalty against the base model (0 = off). A
	// positive value needs a BaseModel.
	KLCoef float64 `json:"kl_coef,omitempty"`
	// KLDiscount, when positive, spreads each token's KL penalty as a
	// discounted sum over the tokens after it (tinker-cookbook's
	// kl_discount_factor); must be in [0, 1].
	KLDiscount float64 `json:"kl_discount,omitempty"`
}

// Defaults of the zero fields.
const (
	DefaultClipEps      = 0.2
	DefaultTruncateAt   = 2.0
	DefaultBehaviourCap = 5.0
)

// WithDefaults returns c with zero fields replaced by their defaults.
func (c Config) WithDefaults() Config {
	if c.Objective == "" {
		c.Objective = Naive
	}
	if c.ClipEpsLow == 0 {
		c.ClipEpsLow = DefaultClipEps
	}
	if c.ClipEpsHigh == 0 {
		c.ClipEpsHigh = DefaultClipEps
	}
	if c.TruncateAt == 0 {
		c.TruncateAt = DefaultTruncateAt
	}
	if c.BehaviourCap == 0 {
		c.BehaviourCap = DefaultBehaviourCap
	}
	return c
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate checks c after defaults; each error names the field, the value
// and what is allowed.
func (c Config) Validate() error {
	c = c.WithDefaults()
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s %s", ErrConfig, field, fmt.Sprintf(format, a...))
	}
	if _, err := ParseObjective(string(c.Objective)); err != nil {
		return err
	}
	switch {
	case !(c.ClipEpsLow > 0 && c.ClipEpsLow < 1):
		return bad("ClipEpsLow", "is %v; must be in (0, 1) (the ratio's lower bound is 1−ClipEpsLow), or 0 for %v", c.ClipEpsLow, DefaultClipEps)
	case !(c.ClipEpsHigh > 0) || !finite(c.ClipEpsHigh):
		return bad("ClipEpsHigh", "is %v; must be a positive finite number, or 0 for %v", c.ClipEpsHigh, DefaultClipEps)
	case !(c.TruncateAt > 0) || !finite(c.TruncateAt):
		return bad("TruncateAt", "is %v; must be a positive finite number, or 0 for %v", c.TruncateAt, DefaultTruncateAt)
	case !finite(c.BehaviourCap) || (c.BehaviourCap > 0 && c.BehaviourCap <= 1):
		return bad("BehaviourCap", "is %v; must exceed 1, be negative (no filter), or 0 for %v", c.BehaviourCap, DefaultBehaviourCap)
	case !(c.KLCoef >= 0) || !finite(c.KLCoef):
		return bad("KLCoef", "is %v; must be a finite number ≥ 0 (0 = no KL penalty)", c.KLCoef)
	case !(c.KLDiscount >= 0 && c.KLDiscount <= 1):
		return bad("KLDiscount", "is %v; must be in [0, 1] (0 = no discounting)", c.KLDiscount)
	}
	return nil
}
