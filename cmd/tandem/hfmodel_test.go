package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"export", "-hf", dir + "2", "-dtype", "f8"}:      "want f32 or bf16",
		{"sample", "-model", dir, "-renderer", "klingon"}: "klingon",
	} {
		_, _, err := runCLI(*args...)
		require.Error(t, err, *args)
		assert.Contains(t, err.Error(), want, *args)
	}
}
