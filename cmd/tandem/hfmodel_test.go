package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine/kernels"
)

// export -hf writes the shipped model as a Hugging Face folder, and
// sample -model loads it back: the same seed gives the same tokens with
// the same log-probs as sampling the shipped model directly.
func TestExportHFThenSampleModel(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "hf")
	out, _, err := runCLI("export", "-hf", dir)
	require.NoError(t, err)
	assert.Contains(t, out, "wrote "+dir)
	_, _, err = runCLI("export", "-hf", dir)
	require.ErrorContains(t, err, "-force", "an existing folder is not overwritten by accident")

	type res struct {
		Samples []struct {
			Text    string
			Logprob float64
		}
	}
	sample := func(args ...string) res {
		out, _, err := runCLI(append([]string{"sample", "-prompt", "What is 12 + 35?", "-n", "3", "-max-tokens", "3", "-seed", "7", "-json"}, args...)...)
		require.NoError(t, err)
		var r res
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.Len(t, r.Samples, 3)
		return r
	}
	assert.Equal(t, sample(), sample("-model", dir, "-raw"))

	// The shipped model is stored in F16, so an F16 export is exact; it
	// loads with its matrices kept in half precision (SgemmF16), which
	// samples exactly as the float32 model does: the same tokens and
	// log-probs to the last bit.
	dir16 := filepath.Join(t.TempDir(), "hf16")
	_, _, err = runCLI("export", "-hf", dir16, "-dtype", "f16")
	require.NoError(t, err)
	cfg16, err := os.ReadFile(filepath.Join(dir16, "config.json"))
	require.NoError(t, err)
	assert.Contains(t, string(cfg16), `"torch_dtype": "float16"`)
	assert.Equal(t, sample(), sample("-model", dir16, "-raw"))

	// Without -raw the prompt is a chat turn (the folder has no chat
	// template: role_colon), so it is sampled from different tokens.
	out, _, err = runCLI("sample", "-model", dir, "-prompt", "What is 12 + 35?", "-n", "1", "-max-tokens", "2", "-json")
	require.NoError(t, err)
	var chatRes struct{ Renderer string }
	require.NoError(t, json.Unmarshal([]byte(out), &chatRes))
	assert.Equal(t, "role_colon", chatRes.Renderer)

	for args, want := range map[*[]string]string{
		{"sample", "-model", dir, "-base", "x"}:          "give one",
		{"sample", "-model", filepath.Join(dir, "nope")}: "config.json",
		{"export"}: "-hf DIR is required",
		{"export", "-hf", dir + "2", "-dtype", "f8"}:      "want f32, bf16 or f16",
		{"sample", "-model", dir, "-renderer", "klingon"}: "klingon",
	} {
		_, _, err := runCLI(*args...)
		require.Error(t, err, *args)
		assert.Contains(t, err.Error(), want, *args)
	}
}

// train -model trains a Hugging Face folder on the arithmetic task
// rendered as a chat (role_colon here: the exported folder has no chat
// template); on-policy, the sampler's log-probs are the trainer's, and the
// final adapter samples with sample -model.
func TestTrainHFModel(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "hf")
	_, _, err := runCLI("export", "-hf", dir)
	require.NoError(t, err)
	runs := t.TempDir()
	out, _, err := runCLI("train", "-model", dir, "-dir", runs, "-steps", "2", "-groups", "2", "-group-size", "2",
		"-max-tokens", "6", "-eval-problems", "2", "-max-staleness", "0", "-quiet")
	require.NoError(t, err)
	var sum struct {
		Steps          int     `json:"steps"`
		MeanLogprobGap float64 `json:"mean_logprob_gap"`
		Checkpoint     string  `json:"checkpoint"`
		Dir            string  `json:"dir"`
	}
	decodeSummary(t, out, &sum)
	assert.Equal(t, 2, sum.Steps)
	assert.Less(t, sum.MeanLogprobGap, 1e-4, "synchronous: the sampler's log-probs are the trainer's")
	store := filepath.Join(sum.Dir, "checkpoints")
	out, _, err = runCLI("sample", "-model", dir, "-checkpoint", "tinker://arith-grpo/sampler_weights/final", "-store", store, "-n", "2", "-max-tokens", "3", "-json")
	require.NoError(t, err)
	var smp struct {
		Renderer string
		Samples  []any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &smp))
	assert.Len(t, smp.Samples, 2)
	assert.Equal(t, "role_colon", smp.Renderer)

	_, _, err = runCLI("train", "-model", dir, "-base", "x.safetensors", "-dir", runs, "-quiet")
	require.ErrorContains(t, err, "both name the base")
	_, _, err = runCLI("train", "-renderer", "qwen3", "-dir", runs, "-quiet")
	require.ErrorContains(t, err, "needs model")
}

// train -activations bfloat16 over a BF16 folder rounds the activations in
// the products with the base (trainer and sampler alike, so on-policy their
// log-probs nearly agree); over a float32 folder, or with an unknown value,
// it is refused with the reason.
func TestTrainHFModelBF16Activations(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "hf")
	_, _, err := runCLI("export", "-hf", dir, "-dtype", "bf16")
	require.NoError(t, err)
	runs := t.TempDir()
	out, _, err := runCLI("train", "-model", dir, "-activations", "bfloat16", "-dir", runs, "-steps", "2", "-groups", "2", "-group-size", "2",
		"-max-tokens", "6", "-eval-problems", "2", "-max-staleness", "0", "-quiet")
	require.NoError(t, err)
	var sum struct {
		Steps          int     `json:"steps"`
		MeanLogprobGap float64 `json:"mean_logprob_gap"`
	}
	decodeSummary(t, out, &sum)
	assert.Equal(t, 2, sum.Steps)
	// Sampler and trainer compute the activations in different orders;
	// rounded to bfloat16, an f32 difference in the last bit can move one
	// by 2⁻⁸, so their log-probs agree to about 1e-3 (float32: 1e-6).
	if kernels.BF16RoundsA() {
		assert.Less(t, sum.MeanLogprobGap, 5e-3, "synchronous: the sampler's log-probs are nearly the trainer's")
		assert.Greater(t, sum.MeanLogprobGap, 1e-4, "the activations are rounded")
	} else {
		assert.Less(t, sum.MeanLogprobGap, 1e-4, "nothing rounded here (%s): as float32", kernels.BF16Implementation())
	}

	f32 := filepath.Join(t.TempDir(), "hf32")
	_, _, err = runCLI("export", "-hf", f32)
	require.NoError(t, err)
	_, _, err = runCLI("train", "-model", f32, "-activations", "bfloat16", "-dir", runs, "-steps", "1", "-quiet")
	require.ErrorContains(t, err, "all stored in BF16")
	_, _, err = runCLI("train", "-model", dir, "-activations", "bfloat16", "-weights", "float32", "-dir", runs, "-quiet")
	require.ErrorContains(t, err, "needs the weights stored")
	_, _, err = runCLI("train", "-activations", "bfloat16", "-dir", runs, "-quiet")
	require.ErrorContains(t, err, "needs model")
	_, _, err = runCLI("train", "-model", dir, "-activations", "f8", "-dir", runs, "-quiet")
	require.ErrorContains(t, err, `activations "f8" unknown`)
}
