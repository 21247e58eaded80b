package localbase

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
)

// The agreement with a fresh trainer and with a base sampler is tested in
// rl/algo (TestBaseModelsAgree); here, the errors.
func TestBaseErrors(t *testing.T) {
	cfg := engine.Config{Vocab: engine.VocabSize, Dim: 16, Layers: 1, Heads: 2, Hidden: 32, Context: 8}
	m, err := engine.NewModel[float32](cfg, 1)
	require.NoError(t, err)
	tr, err := local.NewTrainer(m, local.TrainerOptions{})
	require.NoError(t, err)
	defer tr.Close()
	ctx := context.Background()
	_, err = Base{Trainer: tr}.BaseLogprobs(ctx, []rl.Datum{{ModelInput: rl.Tokens([]int{1, 2}),
		LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{2})}}})
	require.ErrorContains(t, err, "datum 0: 1 target tokens for 2 input tokens")
	long := make([]int, 9)
	_, err = Base{Trainer: tr}.BaseLogprobs(ctx, []rl.Datum{{ModelInput: rl.Tokens(long),
		LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(long)}}})
	require.ErrorContains(t, err, "context")
	out, err := Base{Trainer: tr}.BaseLogprobs(ctx, []rl.Datum{{ModelInput: rl.Tokens([]int{1, 2}),
		LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{2, 3})}}})
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Len(t, out[0], 2)
}
