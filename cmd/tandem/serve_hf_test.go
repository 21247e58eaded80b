package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// serve -model hosts a Hugging Face folder: through the Tinker protocol
// (backend/tinker, protobuf mode) its forward log-probs equal the float64
// PyTorch transcription's goldens (engine/hf/testdata), training lowers
// the loss, and the sampler scores its own tokens as the trainer does. A
// float32 checkpoint is served in float32; a BF16 one keeps its matrices
// in bfloat16 (the default), within the BF16 goldens' 2e-3.
func TestServeHFModel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		folder string
		tol    float64
	}{{"qwen3", 1e-4}, {"qwen3-bf16-sharded", 2e-3}} {
		t.Run(c.folder, func(t *testing.T) {
			t.Parallel()
			serveHFModel(t, c.folder, c.tol)
		})
	}
}

func serveHFModel(t *testing.T, case_ string, tol float64) {
	folder := filepath.Join("..", "..", "engine", "hf", "testdata", case_)
	var golden struct {
		Sequences []struct {
			Tokens   []int
			Logprobs []float64
		}
	}
	b, err := os.ReadFile(filepath.Join(folder, "golden.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &golden))

	const key = "test-key-hf-123456"
	ctx := t.Context()
	url := startServe(t, "-api-key", key, "-store", t.TempDir(), "-model", folder, "-threads", "1")
	addr := strings.TrimPrefix(url, "http://")

	c, err := tinker.New(ctx, tinker.Options{BaseURL: "http://" + addr, APIKey: key})
	require.NoError(t, err)
	defer c.Close()
	caps, err := c.Capabilities(ctx)
	require.NoError(t, err)
	require.Len(t, caps.SupportedModels, 1)
	name := caps.SupportedModels[0].ModelName
	assert.Equal(t, case_, name, "the folder's name (its config has no _name_or_path)")

	tr, err := c.NewTrainer(ctx, name, wire.LoraConfig{}) // the SDK's default: every adapter, lm_head included
	require.NoError(t, err)
	var data []rl.Datum
	n := 0
	for _, s := range golden.Sequences {
		w := make([]float64, len(s.Tokens)-1)
		for i := range w {
			w[i] = 1
		}
		data = append(data, rl.Datum{ModelInput: rl.Tokens(s.Tokens[:len(s.Tokens)-1]), LossFnInputs: map[string]rl.TensorData{
			rl.InputTargetTokens: rl.IntTensor(s.Tokens[1:]), rl.InputWeights: rl.FloatTensor(w)}})
		n += len(w)
	}
	out, err := tr.Forward(ctx, data, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	gap := 0.0
	for i, s := range golden.Sequences {
		lp := out.LossFnOutputs[i]["logprobs"].Floats
		require.Len(t, lp, len(s.Logprobs))
		for j := range lp {
			gap = math.Max(gap, math.Abs(lp[j]-s.Logprobs[j]))
		}
	}
	assert.Less(t, gap, tol, "forward log-probs vs the PyTorch transcription")
	t.Logf("%s: forward log-probs within %.2g of the PyTorch transcription", case_, gap)

	var losses []float64
	for range 3 {
		fb := tr.ForwardBackward(ctx, data, rl.Loss{Name: rl.CrossEntropy})
		_, err := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1e-2}).Wait(ctx)
		require.NoError(t, err)
		r, err := fb.Wait(ctx)
		require.NoError(t, err)
		losses = append(losses, r.Metrics["loss:sum"]/float64(n))
	}
	assert.Less(t, losses[2], losses[0], "SFT lowers the loss: %v", losses)

	ref, err := tr.SaveForSampler(ctx, "hf").Wait(ctx)
	require.NoError(t, err)
	smp := c.NewSampler(name)
	require.NoError(t, smp.Load(ctx, ref))
	prompt := golden.Sequences[0].Tokens[:8]
	seed := int64(3)
	got, err := smp.Sample(ctx, rl.Tokens(prompt), 2, rl.SamplingParams{MaxTokens: 6, Temperature: 1, Seed: &seed})
	require.NoError(t, err)
	require.Len(t, got.Sequences, 2)
	seq := got.Sequences[0]
	full := append(append([]int(nil), prompt...), seq.Tokens...)
	fw, err := tr.Forward(ctx, []rl.Datum{{ModelInput: rl.Tokens(full[:len(full)-1]), LossFnInputs: map[string]rl.TensorData{
		rl.InputTargetTokens: rl.IntTensor(full[1:])}}}, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	flp := fw.LossFnOutputs[0]["logprobs"].Floats[len(prompt)-1:]
	for j, lp := range seq.Logprobs {
		assert.InDelta(t, flp[j], lp, 1e-4, "token %d: sampler vs trainer", j)
	}
}
