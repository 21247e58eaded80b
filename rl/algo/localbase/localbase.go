// Package localbase gives GRPO's KL penalty the base model's log-probs from
// an in-process backend/local trainer: one exclusive engine call, queued in
// order with the trainer's other calls, that scores the datums with the
// adapter switched off.
package localbase

import (
	"context"
	"fmt"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
)

// Base implements algo.BaseModel on a local trainer.
type Base struct{ Trainer *local.Trainer }

var _ algo.BaseModel = Base{}

// BaseLogprobs implements algo.BaseModel. It costs one forward pass over
// the datums and waits for the calls queued before it.
func (b Base) BaseLogprobs(ctx context.Context, data []rl.Datum) ([][]float64, error) {
	ex := make([]engine.Example, len(data))
	for i := range data {
		in := data[i].ModelInput.AllTokens()
		tg := data[i].LossFnInputs[rl.InputTargetTokens].Ints
		if len(tg) != len(in) {
			return nil, fmt.Errorf("localbase: datum %d: %d target tokens for %d input tokens", i, len(tg), len(in))
		}
		targets := make([]int, len(tg))
		for j, t := range tg {
			targets[j] = int(t)
		}
		ex[i] = engine.Example{Input: in, Targets: targets}
	}
	var out [][]float64
	_, err := b.Trainer.Do(ctx, func(ctx context.Context, eng *engine.Trainer[float32]) error {
		var err error
		out, err = eng.BaseLogprobs(ctx, ex)
		return err
	}).Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("localbase: %w", err)
	}
	return out, nil
}
