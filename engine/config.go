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
	Heads   int `json:"heads"`   // query heads; the head width (HeadDim, or Dim/Heads) must be even (RoPE)
	Hidden  int `json:"hidden"`  // width of the SwiGLU MLP
	Context int `json:"context"` // longest sequence the model accepts

	RopeTheta float64 `json:"rope_theta,omitempty"` // rotary base; 0 means 10000
	NormEps   float64 `json:"norm_eps,omitempty"`   // RMSNorm epsilon; 0 means 1e-5

	// Hugging Face architecture options (Llama 3, Qwen2, Qwen3); the zero
	// value of each is tandem's own model.
	KVHeads   int          `json:"kv_heads,omitempty"`     // key/value heads (grouped-query attention: query head h uses KV head h/(Heads/KVHeads)); 0 means Heads; must divide Heads
	HeadDim   int          `json:"head_dim,omitempty"`     // width of one head; 0 means Dim/Heads; even
	QKNorm    bool         `json:"qk_norm,omitempty"`      // RMSNorm over each head of q and k before RoPE, one [HeadDim] weight each (Qwen3)
	QKVBias   bool         `json:"qkv_bias,omitempty"`     // biases on the q, k and v projections (Qwen2; Llama's attention_bias)
	OBias     bool         `json:"o_bias,omitempty"`       // a bias on the o projection (Llama's and Qwen3's attention_bias)
	TiedEmbed bool         `json:"tied_embed,omitempty"`   // the unembedding is the embedding (Model.Unembed is nil)
	Rope      *RopeScaling `json:"rope_scaling,omitempty"` // nil: the default frequencies
}

// RopeScaling changes the rotary frequencies as Hugging Face's
// modeling_rope_utils.py does for rope_type linear, llama3 and yarn.
type RopeScaling struct {
	Type            string  `json:"type"`                                       // "linear", "llama3" or "yarn"
	Factor          float64 `json:"factor"`                                     // > 0 (≥ 1 for yarn)
	LowFreqFactor   float64 `json:"low_freq_factor,omitempty"`                  // llama3
	HighFreqFactor  float64 `json:"high_freq_factor,omitempty"`                 // llama3; > LowFreqFactor
	OriginalContext int     `json:"original_max_position_embeddings,omitempty"` // llama3 (required), yarn
	AttentionFactor float64 `json:"attention_factor,omitempty"`                 // yarn; 0 means 0.1·ln(Factor)+1
	BetaFast        float64 `json:"beta_fast,omitempty"`                        // yarn; 0 means 32
	BetaSlow        float64 `json:"beta_slow,omitempty"`                        // yarn; 0 means 1
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
	case c.Heads < 1 || c.Heads > maxDim:
		return bad("heads %d must be in [1, %d]", c.Heads, maxDim)
	case c.HeadDim == 0 && c.Dim%c.Heads != 0:
		return bad("heads %d must divide dim %d (or set head_dim)", c.Heads, c.Dim)
	case c.HeadDim < 0 || c.HeadDim > maxDim:
		return bad("head_dim %d must be in [0, %d] (0 means dim/heads)", c.HeadDim, maxDim)
	case c.headDim()%2 != 0:
		return bad("head width %d must be even for rotary positions", c.headDim())
	case c.KVHeads < 0 || c.kvHeads() > c.Heads || c.Heads%c.kvHeads() != 0:
		return bad("kv_heads %d must divide heads %d (0 means heads)", c.KVHeads, c.Heads)
	case c.Hidden < 1 || c.Hidden > maxDim:
		return bad("hidden %d must be in [1, %d]", c.Hidden, maxDim)
	case c.Context < 1 || c.Context > 1<<16:
		return bad("context %d must be in [1, %d]", c.Context, 1<<16)
	case c.RopeTheta < 0 || math.IsNaN(c.RopeTheta) || math.IsInf(c.RopeTheta, 0):
		return bad("rope_theta %v must be a positive finite number (0 means 10000)", c.RopeTheta)
	case c.NormEps < 0 || math.IsNaN(c.NormEps) || math.IsInf(c.NormEps, 0):
		return bad("norm_eps %v must be a positive finite number (0 means 1e-5)", c.NormEps)
	}
	if c.Rope != nil {
		if err := c.Rope.validate(); err != nil {
			return fmt.Errorf("%w: rope_scaling: %v", ErrConfig, err)
		}
	}
	return nil
}

func (r RopeScaling) validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	for name, v := range map[string]float64{"factor": r.Factor, "low_freq_factor": r.LowFreqFactor, "high_freq_factor": r.HighFreqFactor,
		"attention_factor": r.AttentionFactor, "beta_fast": r.BetaFast, "beta_slow": r.BetaSlow} {
		if !finite(v) || v < 0 {
			return fmt.Errorf("%s %v must be a finite number ≥ 0", name, v)
		}
	}
	if r.OriginalContext < 0 {
		return fmt.Errorf("original_max_position_embeddings %d must be ≥ 0", r.OriginalContext)
	}
	switch r.Type {
	case "linear":
		if r.Factor <= 0 {
			return fmt.Errorf("linear: factor %v must be > 0", r.Factor)
		}
	case "llama3":
		switch {
		case r.Factor <= 0:
			return fmt.Errorf("llama3: factor %v must be > 0", r.Factor)
		case r.LowFreqFactor <= 0 || r.HighFreqFactor <= r.LowFreqFactor:
			return fmt.Errorf("llama3: want 0 < low_freq_factor (%v) < high_freq_factor (%v)", r.LowFreqFactor, r.HighFreqFactor)
		case r.OriginalContext < 1:
			return fmt.Errorf("llama3: original_max_position_embeddings %d must be ≥ 1", r.OriginalContext)
		}
	case "yarn":
		if r.Factor < 1 {
			return fmt.Errorf("yarn: factor %v must be ≥ 1", r.Factor)
		}
	default:
		return fmt.Errorf("type %q is not implemented; want linear, llama3 or yarn", r.Type)
	}
	return nil
}

// headDim is the width of one attention head.
func (c Config) headDim() int {
	if c.HeadDim != 0 {
		return c.HeadDim
	}
	return c.Dim / c.Heads
}

// kvHeads is the number of key/value heads.
func (c Config) kvHeads() int {
	if c.KVHeads != 0 {
		return c.KVHeads
	}
	return c.Heads
}

// QDim is the width of the query projection's output, Heads·HeadDim.
func (c Config) QDim() int { return c.Heads * c.headDim() }

// KVDim is the width of the key and value projections' outputs,
// KVHeads·HeadDim.
func (c Config) KVDim() int { return c.kvHeads() * c.headDim() }

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
	q, kv := c.QDim(), c.KVDim()
	perLayer := 2*c.Dim + 2*q*c.Dim + 2*kv*c.Dim + 3*c.Dim*c.Hidden
	if c.QKNorm {
		perLayer += 2 * c.headDim()
	}
	if c.QKVBias {
		perLayer += q + 2*kv
	}
	if c.OBias {
		perLayer += c.Dim
	}
	embed := 2 * c.Vocab * c.Dim
	if c.TiedEmbed {
		embed = c.Vocab * c.Dim
	}
	return embed + c.Layers*perLayer + c.Dim
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

// equal reports whether c and o describe the same model (Rope compared by
// value).
func (c Config) equal(o Config) bool {
	cr, or := c.Rope, o.Rope
	c.Rope, o.Rope = nil, nil
	if c != o {
		return false
	}
	if cr == nil || or == nil {
		return cr == or
	}
	return *cr == *or
}
