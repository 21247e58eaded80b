package e2e

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

// TestSamplerProcessDownloads: a sampler process with its own store
// (-fetch-from the trainer process) serves what the trainer publishes by
// downloading the checkpoint archive, and serves exactly the trainer's
// weights: the trainer's log-probs of the sampled tokens equal the
// sampler's.
func TestSamplerProcessDownloads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tandem command and runs two server processes")
	}
	ctx := t.Context() // no deadline but go test's -timeout
	trainerStore, samplerStore := t.TempDir(), t.TempDir()
	trainerProc := startServe(t, "trainer", trainerStore, apiKey)
	samplerProc := startServe(t, "sampler", samplerStore, apiKey, "-fetch-from", trainerProc.url())

	tc, err := tinker.New(ctx, tinker.Options{BaseURL: trainerProc.url(), APIKey: apiKey})
	require.NoError(t, err)
	defer tc.Close()
	sc, err := tinker.New(ctx, tinker.Options{BaseURL: samplerProc.url(), APIKey: apiKey})
	require.NoError(t, err)
	defer sc.Close()
	tr, err := tc.NewTrainer(ctx, basemodel.Name, lora)
	require.NoError(t, err)

	p := rlConfig("").Sampling
	seed := int64(7)
	p.Seed = &seed
	smp := sc.NewSampler(basemodel.Name)
	base0, err := smp.Sample(ctx, promptOf(t, 0), 1, p)
	require.NoError(t, err)

	// One supervised step on the base model's own sample, so version 1
	// differs from the base.
	seq := append(append([]int(nil), promptOf(t, 0).AllTokens()...), base0.Sequences[0].Tokens...)
	d := rl.Datum{ModelInput: rl.Tokens(seq[:len(seq)-1]), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(seq[1:])}}
	_, err = tr.ForwardBackward(ctx, []rl.Datum{d}, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1e-2}).Wait(ctx)
	require.NoError(t, err)
	ref, err := tr.SaveForSampler(ctx, "v1").Wait(ctx)
	require.NoError(t, err)

	require.NoError(t, smp.Load(ctx, ref))
	out, err := smp.Sample(ctx, promptOf(t, 0), 1, p)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), out.Version)

	// The trainer's log-probs of what the sampler drew.
	n := promptOf(t, 0).Len()
	all := append(append([]int(nil), promptOf(t, 0).AllTokens()...), out.Sequences[0].Tokens...)
	fw, err := tr.Forward(ctx, []rl.Datum{{ModelInput: rl.Tokens(all[:len(all)-1]), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(all[1:])}}}, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	trainerLP := fw.LossFnOutputs[0][rl.InputLogprobs].Floats[n-1:]
	samplerLP := out.Sequences[0].Logprobs
	require.Len(t, samplerLP, len(trainerLP))
	gap := 0.0
	for i := range samplerLP {
		gap = math.Max(gap, math.Abs(samplerLP[i]-trainerLP[i]))
	}
	t.Logf("max |sampler − trainer| log-prob over %d tokens: %.2g", len(samplerLP), gap)
	assert.Less(t, gap, 1e-3, "the sampler process serves the trainer's weights")

	st, err := checkpoint.Open(samplerStore)
	require.NoError(t, err)
	ck, err := st.Resolve(ref.URI)
	require.NoError(t, err, "downloaded into the sampler's own store")
	require.NoError(t, ck.Verify(ctx))
	assert.Equal(t, policy.Version(1), ck.Version)
}

// promptOf returns the prompt of the task's i-th problem.
func promptOf(t *testing.T, i int) rl.ModelInput {
	t.Helper()
	return problems(t)[i].(*rollout.SingleTurn).Prompt
}
