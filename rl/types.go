package rl

import (
	"errors"
	"fmt"
	"math"

	"github.com/tandemrl/tandem/optim"
	"github.com/tandemrl/tandem/policy"
)

// ModelInput is a prompt or a training sequence: a list of chunks, as in the
// Tinker API. The embedded engine understands token chunks only.
type ModelInput struct {
	Chunks []Chunk `json:"chunks"`
}

// Chunk is one piece of a ModelInput. Type is "encoded_text" (the only kind
// tandem produces; an empty Type means the same).
type Chunk struct {
	Type   string `json:"type,omitempty"`
	Tokens []int  `json:"tokens"`
}

// ChunkEncodedText is the Type of a chunk of token ids.
const ChunkEncodedText = "encoded_text"

// Tokens returns a ModelInput holding one chunk of toks. It does not copy toks.
func Tokens(toks []int) ModelInput {
	return ModelInput{Chunks: []Chunk{{Type: ChunkEncodedText, Tokens: toks}}}
}

// AllTokens returns every token of every chunk, in order, in a new slice.
func (m ModelInput) AllTokens() []int {
	n := 0
	for _, c := range m.Chunks {
		n += len(c.Tokens)
	}
	out := make([]int, 0, n)
	for _, c := range m.Chunks {
		out = append(out, c.Tokens...)
	}
	return out
}

// Len returns the total number of tokens.
func (m ModelInput) Len() int {
	n := 0
	for _, c := range m.Chunks {
		n += len(c.Tokens)
	}
	return n
}

// DType is a TensorData element type.
type DType string

const (
	Int64   DType = "int64"
	Float32 DType = "float32"
)

// TensorData is a flat tensor as the Tinker API sends it: the elements in
// row-major order, their type and (optionally) a shape. Integer data is held
// in Ints, floating data in Floats; exactly one of them is used, as DType says.
type TensorData struct {
	DType  DType     `json:"dtype"`
	Shape  []int     `json:"shape,omitempty"`
	Ints   []int64   `json:"-"`
	Floats []float64 `json:"-"`
}

// IntTensor returns a 1-D int64 tensor of v.
func IntTensor(v []int) TensorData {
	d := make([]int64, len(v))
	for i, x := range v {
		d[i] = int64(x)
	}
	return TensorData{DType: Int64, Ints: d, Shape: []int{len(v)}}
}

// FloatTensor returns a 1-D float32 tensor of v. It does not copy v.
func FloatTensor(v []float64) TensorData {
	return TensorData{DType: Float32, Floats: v, Shape: []int{len(v)}}
}

// Len returns the number of elements.
func (t TensorData) Len() int {
	if t.DType == Int64 {
		return len(t.Ints)
	}
	return len(t.Floats)
}

// Validate checks that the dtype is known, the data sits in the field the
// dtype names, the shape (when given) matches the element count, and float
// data is finite.
func (t TensorData) Validate() error {
	switch t.DType {
	case Int64:
		if t.Floats != nil {
			return errors.New("tensor: dtype int64 but float data given")
		}
	case Float32:
		if t.Ints != nil {
			return errors.New("tensor: dtype float32 but integer data given")
		}
		for i, f := range t.Floats {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("tensor: element %d is %v; values must be finite", i, f)
			}
		}
	default:
		return fmt.Errorf("tensor: dtype %q unknown; want int64 or float32", t.DType)
	}
	if t.Shape != nil {
		n := 1
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("tensor: shape %v has a negative dimension", t.Shape)
			}
			n *= d
		}
		if n != t.Len() {
			return fmt.Errorf("tensor: shape %v holds %d elements but %d given", t.Shape, n, t.Len())
		}
	}
	return nil
}

// Datum is one training example: an input sequence and the named per-token
// inputs of the loss (Tinker's loss_fn_inputs), e.g. "target_tokens",
// "weights", "logprobs", "advantages". Each loss input has one element per
// input token; target_tokens are the next tokens, already shifted by the
// caller.
type Datum struct {
	ModelInput   ModelInput            `json:"model_input"`
	LossFnInputs map[string]TensorData `json:"loss_fn_inputs"`
}

// Names of loss inputs, as in the Tinker API.
const (
	InputTargetTokens = "target_tokens"
	InputWeights      = "weights"
	InputLogprobs     = "logprobs"
	InputAdvantages   = "advantages"
)

// LossName names a built-in per-token loss.
type LossName string

// The built-in losses. Let q be the sampler's log-prob of the target token,
// p the trainer's, r = exp(p−q), A the advantage, w the weight; losses are
// summed over tokens, with no hidden normalization.
const (
	CrossEntropy       LossName = "cross_entropy"       // −w·p
	ImportanceSampling LossName = "importance_sampling" // −r·A
	PPO                LossName = "ppo"                 // −min(r·A, clip(r,lo,hi)·A)
	CISPO              LossName = "cispo"               // −sg(clip(r,lo,hi))·A·p
	DRO                LossName = "dro"                 // Tinker's DRO, with "beta"
)

// Keys of Loss.Config (Tinker's loss_fn_config). These are the one
// definition of the protocol's key names; the engine, which does not import
// rl, spells them again as engine.ClipLow, engine.ClipHigh and engine.Beta,
// and backend/local's tests check that the two agree.
const (
	ClipLowThreshold  = "clip_low_threshold"  // ppo, cispo: the ratio's lower clip bound
	ClipHighThreshold = "clip_high_threshold" // ppo, cispo: the ratio's upper clip bound
	DROBeta           = "beta"                // dro: the quadratic penalty's weight
)

// Loss selects a loss and its configuration (Tinker's loss_fn_config), e.g.
// {ClipLowThreshold: 0.8, ClipHighThreshold: 1.2} for PPO.
type Loss struct {
	Name   LossName           `json:"loss_fn"`
	Config map[string]float64 `json:"loss_fn_config,omitempty"`
}

// ForwardBackwardOutput is the result of a forward or forward-backward pass:
// one map of per-token outputs per datum (at least "logprobs", the trainer's
// log-prob of each target token) and summed metrics such as "loss:sum".
type ForwardBackwardOutput struct {
	LossFnOutputs []map[string]TensorData `json:"loss_fn_outputs"`
	Metrics       map[string]float64      `json:"metrics"`
}

// AdamParams are the optimizer settings of one step (Tinker's AdamParams):
// optim.AdamParams, the one definition the engine aliases too. A zero field
// means its default: LearningRate 1e-4, Beta1 0.9, Beta2 0.95, Eps 1e-12,
// WeightDecay 0, GradClipNorm 0 (no clipping).
type AdamParams = optim.AdamParams

// OptimStepOutput reports an optimizer step. Version is the policy version
// the trainer holds after the step.
type OptimStepOutput struct {
	Version policy.Version     `json:"version"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// SamplingParams control generation (Tinker's SamplingParams). In Go the
// zero value of each field means: Temperature 0 is greedy decoding (the
// Tinker wire default of 1 is applied by the protocol layer, not here), TopK
// ≤ 0 means no top-k cut, TopP 0 or 1 means no nucleus cut, Seed nil means a
// seed drawn by the sampler. MaxTokens must be positive. Generation stops
// after a stop string appears in the decoded text or a stop token is drawn;
// the stop token or string is included in the returned tokens.
type SamplingParams struct {
	MaxTokens   int      `json:"max_tokens"`
	Temperature float64  `json:"temperature"`
	TopK        int      `json:"top_k,omitempty"`
	TopP        float64  `json:"top_p,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	StopStrings []string `json:"stop_strings,omitempty"`
	StopTokens  []int    `json:"stop_tokens,omitempty"`
	// PromptLogprobs asks for the log-prob of each prompt token as well
	// (Tinker's prompt_logprobs / compute_logprobs).
	PromptLogprobs bool `json:"prompt_logprobs,omitempty"`
	// TopKPromptLogprobs, when positive, asks for the K most likely tokens
	// and their log-probs at each prompt position as well (Tinker's
	// topk_prompt_logprobs), at most MaxTopKPromptLogprobs.
	TopKPromptLogprobs int `json:"topk_prompt_logprobs,omitempty"`
}

// MaxTopKPromptLogprobs bounds SamplingParams.TopKPromptLogprobs.
const MaxTopKPromptLogprobs = 1024

// Validate checks every field's range.
func (p SamplingParams) Validate() error {
	switch {
	case p.MaxTokens <= 0:
		return fmt.Errorf("sampling: max_tokens %d must be positive", p.MaxTokens)
	case !(p.Temperature >= 0) || math.IsInf(p.Temperature, 0):
		return fmt.Errorf("sampling: temperature %v must be a non-negative finite number (0 is greedy)", p.Temperature)
	case !(p.TopP >= 0 && p.TopP <= 1):
		return fmt.Errorf("sampling: top_p %v must be in [0, 1]", p.TopP)
	case p.TopKPromptLogprobs < 0 || p.TopKPromptLogprobs > MaxTopKPromptLogprobs:
		return fmt.Errorf("sampling: topk_prompt_logprobs %d must be in [0, %d]", p.TopKPromptLogprobs, MaxTopKPromptLogprobs)
	}
	for i, s := range p.StopStrings {
		if s == "" {
			return fmt.Errorf("sampling: stop string %d is empty", i)
		}
	}
	return nil
}

// StopReason says why a sequence ended.
type StopReason string

const (
	StopLength StopReason = "length" // max_tokens reached
	StopStop   StopReason = "stop"   // a stop string or token was produced
)

// Sequence is one sampled completion: its tokens, the sampler's log-prob of
// each token under the distribution it was actually drawn from, and why it
// stopped.
type Sequence struct {
	Tokens     []int      `json:"tokens"`
	Logprobs   []float64  `json:"logprobs"`
	StopReason StopReason `json:"stop_reason"`
}

// SampleOutput is the result of one Sample call: n sequences and the policy
// version that produced them (the oldest, if weights changed during the call).
type SampleOutput struct {
	Sequences []Sequence `json:"sequences"`
	// PromptLogprobs holds the log-prob of each prompt token given the ones
	// before it, when requested; the first token has none and holds 0.
	PromptLogprobs []float64 `json:"prompt_logprobs,omitempty"`
	// TopKPromptLogprobs holds, when requested, the K most likely tokens
	// at each prompt position, most likely first, with their log-probs
	// given the tokens before; the first position has none (nil).
	TopKPromptLogprobs [][]TokenLogprob `json:"topk_prompt_logprobs,omitempty"`
	Version            policy.Version   `json:"version"`
	// Replica names the sampler replica that served the call, when a pool
	// of them did (samplerpool sets it); "" otherwise.
	Replica string `json:"replica,omitempty"`
}

// TokenLogprob is a token and its log-prob.
type TokenLogprob struct {
	Token   int     `json:"token"`
	Logprob float64 `json:"logprob"`
}
