package local

import (
	"context"
	"fmt"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
)

// BaseLogprobs scores data under the base model with the adapter switched
// off: for each datum, the log-prob of every target token, one value per
// input position (the layout of Forward's "logprobs" output). It is the
// method GRPO's KL penalty needs, so a *Trainer serves as algo.BaseModel
// without this package knowing of algo.
//
// Each datum needs loss_fn_inputs "target_tokens" (int64, one per input
// token); a datum without them, or with a different count, is an error that
// names it, and nothing is queued. Other loss inputs are not used. The call
// is queued with Do, in order with the trainer's other calls, costs one
// forward pass over the datums and blocks until it has run. The returned
// slices belong to the caller.
func (t *Trainer) BaseLogprobs(ctx context.Context, data []rl.Datum) ([][]float64, error) {
	ex, err := toExamples(data, rl.CrossEntropy)
	if err != nil {
		return nil, fmt.Errorf("local: base log-probs: %w", err)
	}
	var out [][]float64
	_, err = t.Do(ctx, func(ctx context.Context, eng *engine.Trainer[float32]) error {
		var err error
		out, err = eng.BaseLogprobs(ctx, ex)
		return err
	}).Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("local: base log-probs: %w", err)
	}
	return out, nil
}
