package engine

import (
	"errors"
	"fmt"
	"math"
)

// Config is the shape of a model. All fields are required (use
// [DefaultConfig] and change what you need); RopeTheta and NormEps take their
// defaults (10000 and 1e-5) when zero.
type Config struct {
	Vocab   int `json:"vocab"`   // number of token ids
	Dim     int `json:"dim"`     // width of the residual stream
	Layers  int `json:"layers"`  // number of transformer blocks
	Heads   int `json:"heads"`   // attention heads; Dim/Heads must be even (RoPE)
	Hidden  int `json:"hidden"`  // width of the SwiGLU MLP
	Context int `json:"context"` // longest sequence the model accepts

	RopeTheta float64 `json:"rope_theta,omitempty"` // rotary base; 0 means 10000
	NormEps   float64 `json:"norm_eps,omitempty"`   // RMSNorm epsilon; 0 means 1e-5
}

// DefaultConfig is the embedded model's shape: 4 blocks of width 128 with 4
// heads of 32, a 512-wide SwiGLU MLP and a context of 128 character tokens,
// about 1.07 M parameters. On 2 CPU cores a LoRA training step over ~3,000
// tokens takes a second or two, and sampling runs at thousands of tokens per
// second.
func DefaultConfig() Config {
	return Config{Vocab: VocabSize, Dim: 128, Layers: 4, Heads: 4, Hidden: 512, Context: 128}
}

// ErrConfig is wrapped by every error [Config.Validate] returns.
var ErrConfig = errors.New("engine: invalid config")

// Validate checks that every field is in range.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	const maxDim = 1 << 16
	switch {
	case c.Vocab < 2 || c.Vocab > 1<<20:
		return bad("vocab %d must be in [2, %d]", c.Vocab, 1<<20)
	case c.Dim < 2 || c.Dim > maxDim:
		return bad("dim %d must be in [2, %d]", c.Dim, maxDim)
	case c.Layers < 1 || c.Layers > 256:
		return bad("layers %d must be in [1, 256]", c.Layers)
	case c.Heads < 1 || c.Dim%c.Heads != 0:
		return bad("heads %d must be positive and divide dim %d", c.Heads, c.Dim)
	case (c.Dim/c.Heads)%2 != 0:
		return bad("head width dim/heads = %d must be even for rotary positions", c.Dim/c.Heads)
	case c.Hidden < 1 || c.Hidden > maxDim:
		return bad("hidden %d must be in [1, %d]", c.Hidden, maxDim)
	case c.Context < 1 || c.Context > 1<<16:
		return bad("context %d must be in [1, %d]", c.Context, 1<<16)
	case c.RopeTheta < 0 || math.IsNaN(c.RopeTheta) || math.IsInf(c.RopeTheta, 0):
		return bad("rope_theta %v must be a positive finite number (0 means 10000)", c.RopeTheta)
	case c.NormEps < 0 || math.IsNaN(c.NormEps) || math.IsInf(c.NormEps, 0):
		return bad("norm_eps %v must be a positive finite number (0 means 1e-5)", c.NormEps)
	}
	return nil
}

func (c Config) headDim() int { return c.Dim / c.Heads }

func (c Config) ropeTheta() float64 {
	if c.RopeTheta == 0 {
		return 10000
	}
	return c.RopeTheta
}

func (c Config) normEps() float64 {
	if c.NormEps == 0 {
		return 1e-5
	}
	return c.NormEps
}

// Params returns the number of base parameters.
func (c Config) Params() int {
	perLayer := 2*c.Dim + 4*c.Dim*c.Dim + 3*c.Dim*c.Hidden
	return 2*c.Vocab*c.Dim + c.Layers*perLayer + c.Dim
}

// LoraConfig selects the LoRA adapters, mirroring Tinker's
// LoraConfig(rank, seed, train_unembed, train_mlp, train_attn). The zero value
// of Alpha means 32. At least one Train flag must be set; [DefaultLoraConfig]
// sets all three, as Tinker does.
//
// Each adapted linear layer W (out×in) gains A (Rank×in, uniform in
// ±1/√in from Seed) and B (out×Rank, zero), and computes
// y = x·Wᵀ + (Alpha/Rank)·(x·Aᵀ)·Bᵀ, so a fresh adapter leaves the model
// unchanged.
type LoraConfig struct {
	Rank         int     `json:"rank"`
	Alpha        float64 `json:"alpha,omitempty"`
	Seed         int64   `json:"seed"`
	TrainAttn    bool    `json:"train_attn"`    // q, k, v, o projections
	TrainMLP     bool    `json:"train_mlp"`     // gate, up, down projections
	TrainUnembed bool    `json:"train_unembed"` // the unembedding (lm_head)
}

// DefaultLoraConfig is rank 8, alpha 32, every adapter on.
func DefaultLoraConfig() LoraConfig {
	return LoraConfig{Rank: 8, Alpha: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true}
}

func (l LoraConfig) alpha() float64 {
	if l.Alpha == 0 {
		return 32
	}
	return l.Alpha
}

// Scale is Alpha/Rank, the factor on the adapter's contribution.
func (l LoraConfig) Scale() float64 { return l.alpha() / float64(l.Rank) }

// Validate checks the rank, alpha and that some adapter is trained.
func (l LoraConfig) Validate() error {
	switch {
	case l.Rank < 1 || l.Rank > 4096:
		return fmt.Errorf("%w: lora rank %d must be in [1, 4096]", ErrConfig, l.Rank)
	case l.Alpha < 0 || math.IsNaN(l.Alpha) || math.IsInf(l.Alpha, 0):
		return fmt.Errorf("%w: lora alpha %v must be a positive finite number (0 means 32)", ErrConfig, l.Alpha)
	case !l.TrainAttn && !l.TrainMLP && !l.TrainUnembed:
		return fmt.Errorf("%w: lora trains nothing; set at least one of train_attn, train_mlp, train_unembed", ErrConfig)
	}
	return nil
}
