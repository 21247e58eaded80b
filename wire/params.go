package wire

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tandemrl/tandem/rl"
)

// LoraConfig is the adapter shape of create_model (types/lora_config.py).
// Absent fields take the SDK's defaults: Seed none, every Train* true.
type LoraConfig struct {
	Rank         int    `json:"rank"`
	Seed         *int64 `json:"seed,omitempty"`
	TrainUnembed bool   `json:"train_unembed"`
	TrainMLP     bool   `json:"train_mlp"`
	TrainAttn    bool   `json:"train_attn"`
}

// DefaultLoraRank is the rank the SDK's create_lora_training_client uses.
const DefaultLoraRank = 32

// MaxLoraRank bounds the rank a request may ask for.
const MaxLoraRank = 1024

// DefaultLoraConfig returns rank 32 with every part trained, as the SDK does.
func DefaultLoraConfig() LoraConfig {
	return LoraConfig{Rank: DefaultLoraRank, TrainUnembed: true, TrainMLP: true, TrainAttn: true}
}

func decodeLoraConfig(o obj) (LoraConfig, error) {
	c := DefaultLoraConfig()
	rank, err := o.integer("rank", 0, true)
	if err != nil {
		return c, err
	}
	if rank < 1 || rank > MaxLoraRank {
		return c, fieldErr(o.at("rank"), "%d out of range; want 1 to %d", rank, MaxLoraRank)
	}
	c.Rank = int(rank)
	if c.Seed, err = o.optInt("seed"); err != nil {
		return c, err
	}
	if c.TrainUnembed, err = o.boolean("train_unembed", true); err != nil {
		return c, err
	}
	if c.TrainMLP, err = o.boolean("train_mlp", true); err != nil {
		return c, err
	}
	if c.TrainAttn, err = o.boolean("train_attn", true); err != nil {
		return c, err
	}
	return c, nil
}

// adamWire is AdamParams as sent: the four fields of SDK v0.3.0
// (types/optim_step_request.py) always, the two later additions only when set.
type adamWire struct {
	LearningRate float64 `json:"learning_rate"`
	Beta1        float64 `json:"beta1"`
	Beta2        float64 `json:"beta2"`
	Eps          float64 `json:"eps"`
	WeightDecay  float64 `json:"weight_decay,omitempty"`
	GradClipNorm float64 `json:"grad_clip_norm,omitempty"`
}

func encodeAdam(p rl.AdamParams) adamWire {
	p = p.WithDefaults()
	return adamWire(p)
}

// decodeAdam applies the SDK defaults (lr 1e-4, beta1 0.9, beta2 0.95,
// eps 1e-12; weight_decay and grad_clip_norm 0) and checks ranges.
func decodeAdam(o obj) (rl.AdamParams, error) {
	d := rl.AdamParams{}.WithDefaults()
	var p rl.AdamParams
	var err error
	fields := []struct {
		name string
		dst  *float64
		def  float64
	}{
		{"learning_rate", &p.LearningRate, d.LearningRate},
		{"beta1", &p.Beta1, d.Beta1},
		{"beta2", &p.Beta2, d.Beta2},
		{"eps", &p.Eps, d.Eps},
		{"weight_decay", &p.WeightDecay, 0},
		{"grad_clip_norm", &p.GradClipNorm, 0},
	}
	for _, f := range fields {
		if *f.dst, err = o.number(f.name, f.def); err != nil {
			return p, err
		}
	}
	if err := p.Validate(); err != nil {
		return p, &FieldError{Field: o.path, Problem: err.Error()}
	}
	return p, nil
}

// Stop is SamplingParams.stop: the SDK accepts a string, a list of strings
// or a list of token ids. At most one of Strings and Tokens is set.
type Stop struct {
	Strings []string
	Tokens  []int
}

// IsZero reports whether no stop condition is set.
func (s Stop) IsZero() bool { return len(s.Strings) == 0 && len(s.Tokens) == 0 }

// MarshalJSON writes a list of strings or a list of ids.
func (s Stop) MarshalJSON() ([]byte, error) {
	switch {
	case len(s.Strings) > 0 && len(s.Tokens) > 0:
		return nil, errors.New("wire: stop holds either strings or token ids, not both")
	case len(s.Tokens) > 0:
		return json.Marshal(s.Tokens)
	case len(s.Strings) > 0:
		return json.Marshal(s.Strings)
	}
	return []byte("null"), nil
}

func decodeStop(path string, v any) (Stop, error) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return Stop{}, fieldErr(path, "empty stop string")
		}
		return Stop{Strings: []string{x}}, nil
	case numList:
		var s Stop
		for i, lit := range x {
			p := index(path, i)
			id, err := litInt(p, lit)
			if err != nil {
				return Stop{}, err
			}
			tok, err := tokenID(p, id)
			if err != nil {
				return Stop{}, err
			}
			s.Tokens = append(s.Tokens, tok)
		}
		return s, nil
	case []any:
		var s Stop
		for i, e := range x {
			p := index(path, i)
			switch y := e.(type) {
			case string:
				if len(s.Tokens) > 0 {
					return Stop{}, fieldErr(p, "mixes strings and token ids; want one kind")
				}
				if y == "" {
					return Stop{}, fieldErr(p, "empty stop string")
				}
				s.Strings = append(s.Strings, y)
			case json.Number:
				if len(s.Strings) > 0 {
					return Stop{}, fieldErr(p, "mixes strings and token ids; want one kind")
				}
				id, err := toInt(p, y)
				if err != nil {
					return Stop{}, err
				}
				tok, err := tokenID(p, id)
				if err != nil {
					return Stop{}, err
				}
				s.Tokens = append(s.Tokens, tok)
			default:
				return Stop{}, fieldErr(p, "got %s, want a string or a token id", kind(e))
			}
		}
		return s, nil
	}
	return Stop{}, fieldErr(path, "got %s, want a string, a list of strings or a list of token ids", kind(v))
}

// SamplingParams is types/sampling_params.py. Absent fields take the SDK
// defaults: Temperature 1, TopK -1 (no limit), TopP 1, MaxTokens and Seed none.
type SamplingParams struct {
	MaxTokens   *int    `json:"max_tokens,omitempty"`
	Seed        *int64  `json:"seed,omitempty"`
	Stop        Stop    `json:"stop,omitzero"`
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float64 `json:"top_p"`
}

// MaxMaxTokens bounds max_tokens in a request.
const MaxMaxTokens = 1 << 20

func decodeSamplingParams(o obj) (SamplingParams, error) {
	p := SamplingParams{Temperature: 1, TopK: -1, TopP: 1}
	mt, err := o.optInt("max_tokens")
	if err != nil {
		return p, err
	}
	if mt != nil {
		if *mt < 1 || *mt > MaxMaxTokens {
			return p, fieldErr(o.at("max_tokens"), "%d out of range; want 1 to %d", *mt, MaxMaxTokens)
		}
		n := int(*mt)
		p.MaxTokens = &n
	}
	if p.Seed, err = o.optInt("seed"); err != nil {
		return p, err
	}
	if v, ok := o.get("stop"); ok {
		if p.Stop, err = decodeStop(o.at("stop"), v); err != nil {
			return p, err
		}
	}
	if p.Temperature, err = o.number("temperature", 1); err != nil {
		return p, err
	}
	if p.Temperature < 0 {
		return p, fieldErr(o.at("temperature"), "%v is negative; want ≥ 0 (0 is greedy)", p.Temperature)
	}
	topK, err := o.integer("top_k", -1, false)
	if err != nil {
		return p, err
	}
	if topK < -1 || topK > 1<<31 {
		return p, fieldErr(o.at("top_k"), "%d out of range; want -1 (no limit) or a positive count", topK)
	}
	p.TopK = int(topK)
	if p.TopP, err = o.number("top_p", 1); err != nil {
		return p, err
	}
	if !(p.TopP > 0 && p.TopP <= 1) {
		return p, fieldErr(o.at("top_p"), "%v out of range; want 0 < top_p ≤ 1", p.TopP)
	}
	return p, nil
}

// ToRL converts to tandem's SamplingParams. Tinker's temperature default of
// 1 has already been applied by the decoder; a missing max_tokens becomes
// defaultMaxTokens.
func (p SamplingParams) ToRL(defaultMaxTokens int) rl.SamplingParams {
	out := rl.SamplingParams{
		MaxTokens:   defaultMaxTokens,
		Temperature: p.Temperature,
		Seed:        p.Seed,
		StopStrings: p.Stop.Strings,
		StopTokens:  p.Stop.Tokens,
	}
	if p.MaxTokens != nil {
		out.MaxTokens = *p.MaxTokens
	}
	if p.TopK > 0 {
		out.TopK = p.TopK
	}
	if p.TopP < 1 {
		out.TopP = p.TopP
	}
	return out
}

// SamplingParamsFromRL converts tandem's params to the wire form. rl's
// temperature 0 (greedy) is sent explicitly, since absent means 1 on the wire.
func SamplingParamsFromRL(p rl.SamplingParams) (SamplingParams, error) {
	if err := p.Validate(); err != nil {
		return SamplingParams{}, err
	}
	if len(p.StopStrings) > 0 && len(p.StopTokens) > 0 {
		return SamplingParams{}, fmt.Errorf("sampling: Tinker's stop carries either strings or token ids, not both (got %d strings, %d ids)", len(p.StopStrings), len(p.StopTokens))
	}
	mt := p.MaxTokens
	out := SamplingParams{
		MaxTokens:   &mt,
		Seed:        p.Seed,
		Stop:        Stop{Strings: p.StopStrings, Tokens: p.StopTokens},
		Temperature: p.Temperature,
		TopK:        -1,
		TopP:        1,
	}
	if p.TopK > 0 {
		out.TopK = p.TopK
	}
	if p.TopP > 0 && p.TopP < 1 {
		out.TopP = p.TopP
	}
	return out, nil
}
