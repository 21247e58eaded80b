package sft

import (
	"errors"
	"fmt"

	"github.com/tandemrl/tandem/rl"
)

// Encoder turns text into token ids (engine.Tokenizer is one).
type Encoder interface {
	Encode(s string) ([]int, error)
}

// Format says how an example becomes one token sequence:
// Prefix ++ prompt ++ completion ++ Suffix. Only the completion and Suffix
// tokens are trained on. For the embedded model: Prefix {engine.BOS},
// Suffix empty when completions end with the newline the sampler stops at.
type Format struct {
	Prefix []int `json:"prefix,omitempty"`
	Suffix []int `json:"suffix,omitempty"`
	// MaxTokens, when positive, is the longest input a datum may have (the
	// model's context); a longer example is an error naming its line.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Datum returns the cross_entropy datum of one tokenized pair: input =
// prompt ++ completion without its last token, targets shifted by one,
// weight 1 on the positions whose target is a completion token and 0 on the
// others. The completion must not be empty; the datum does not alias the
// arguments.
func Datum(prompt, completion []int) (rl.Datum, error) {
	if len(completion) == 0 {
		return rl.Datum{}, errors.New("sft: empty completion")
	}
	full := make([]int, 0, len(prompt)+len(completion))
	full = append(append(full, prompt...), completion...)
	n := len(full) - 1
	if n == 0 {
		return rl.Datum{}, errors.New("sft: a one-token sequence has nothing to predict; give a prompt (e.g. BOS)")
	}
	w := make([]float64, n)
	for p := max(len(prompt)-1, 0); p < n; p++ {
		w[p] = 1
	}
	return rl.Datum{
		ModelInput: rl.Tokens(full[:n]),
		LossFnInputs: map[string]rl.TensorData{
			rl.InputTargetTokens: rl.IntTensor(full[1:]),
			rl.InputWeights:      rl.FloatTensor(w),
		},
	}, nil
}

// Datums tokenizes examples with tok and f, one datum each. Errors name the
// example's line (or index) and field.
func Datums(tok Encoder, exs []Example, f Format) ([]rl.Datum, error) {
	out := make([]rl.Datum, 0, len(exs))
	for i, ex := range exs {
		p, err := tok.Encode(ex.Prompt)
		if err != nil {
			return nil, fmt.Errorf("sft: %s: prompt: %w", ex.where(i), err)
		}
		c, err := tok.Encode(ex.Completion)
		if err != nil {
			return nil, fmt.Errorf("sft: %s: completion: %w", ex.where(i), err)
		}
		prompt := append(append([]int(nil), f.Prefix...), p...)
		completion := append(c, f.Suffix...)
		d, err := Datum(prompt, completion)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ex.where(i), err)
		}
		if n := d.ModelInput.Len(); f.MaxTokens > 0 && n > f.MaxTokens {
			return nil, fmt.Errorf("sft: %s: %d input tokens; the model takes at most %d", ex.where(i), n, f.MaxTokens)
		}
		out = append(out, d)
	}
	return out, nil
}

// weightSum is the number of trained tokens of data: the sum of weights
// (every target counts 1 when a datum has none).
func weightSum(data []rl.Datum) float64 {
	var s float64
	for _, d := range data {
		w, ok := d.LossFnInputs[rl.InputWeights]
		if !ok {
			s += float64(d.ModelInput.Len())
			continue
		}
		for _, x := range w.Floats {
			s += x
		}
	}
	return s
}
