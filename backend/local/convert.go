package local

import (
	"fmt"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
)

// toExamples converts datums to engine examples, checking that every loss
// input the loss needs is present, of the right dtype, and one value per
// input token.
func toExamples(data []rl.Datum, loss rl.LossName) ([]engine.Example, error) {
	out := make([]engine.Example, len(data))
	for i, d := range data {
		in := d.ModelInput.AllTokens()
		ex := engine.Example{Input: in}
		tt, ok := d.LossFnInputs[rl.InputTargetTokens]
		if !ok {
			return nil, fmt.Errorf("datum %d: loss_fn_inputs has no %q", i, rl.InputTargetTokens)
		}
		if tt.DType != rl.Int64 {
			return nil, fmt.Errorf("datum %d: %s has dtype %q, want int64", i, rl.InputTargetTokens, tt.DType)
		}
		if len(tt.Ints) != len(in) {
			return nil, fmt.Errorf("datum %d: %s has %d values for %d input tokens", i, rl.InputTargetTokens, len(tt.Ints), len(in))
		}
		ex.Targets = make([]int, len(tt.Ints))
		for j, t := range tt.Ints {
			ex.Targets[j] = int(t)
		}
		floats := func(name string, required bool) ([]float64, error) {
			t, ok := d.LossFnInputs[name]
			if !ok {
				if required {
					return nil, fmt.Errorf("datum %d: loss %s needs loss_fn_inputs %q", i, loss, name)
				}
				return nil, nil
			}
			if t.DType != rl.Float32 {
				return nil, fmt.Errorf("datum %d: %s has dtype %q, want float32", i, name, t.DType)
			}
			if len(t.Floats) != len(in) {
				return nil, fmt.Errorf("datum %d: %s has %d values for %d input tokens", i, name, len(t.Floats), len(in))
			}
			return t.Floats, nil
		}
		var err error
		if ex.Weights, err = floats(rl.InputWeights, false); err != nil {
			return nil, err
		}
		rlLoss := loss != rl.CrossEntropy
		if ex.Logprobs, err = floats(rl.InputLogprobs, rlLoss); err != nil {
			return nil, err
		}
		if ex.Advantages, err = floats(rl.InputAdvantages, rlLoss); err != nil {
			return nil, err
		}
		out[i] = ex
	}
	return out, nil
}

func fromOutput(o engine.Output) rl.ForwardBackwardOutput {
	outs := make([]map[string]rl.TensorData, len(o.Logprobs))
	for i, lp := range o.Logprobs {
		outs[i] = map[string]rl.TensorData{rl.InputLogprobs: rl.FloatTensor(lp)}
	}
	return rl.ForwardBackwardOutput{LossFnOutputs: outs, Metrics: o.Metrics}
}

func toSamplingParams(p rl.SamplingParams, seed int64) engine.SamplingParams {
	return engine.SamplingParams{
		MaxTokens:      p.MaxTokens,
		Temperature:    p.Temperature,
		TopK:           p.TopK,
		TopP:           p.TopP,
		Seed:           seed,
		StopStrings:    p.StopStrings,
		StopTokens:     p.StopTokens,
		PromptLogprobs: p.PromptLogprobs,
	}
}
