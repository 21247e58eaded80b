package main

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/openai"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// backend/openai (vLLM dialect) against tandem serve's OpenAI-compatible
// surface: the start-up probe accepts its log-probs, the base samples as
// version 0, a PEFT adapter loads under its version's name and samples as
// that version, and every sampled token's log-prob, and every prompt
// token's (prompt_logprobs), is the engine's own score of it under the
// same weights (gap ≤ 1e-4).
func TestOpenAIBackendAgainstServe(t *testing.T) {
	t.Parallel()
	const key = "test-key-openai-backend-1"
	ctx := t.Context()
	url := startServe(t, "-api-key", key, "-store", t.TempDir(), "-threads", "1")

	s, err := openai.New(ctx, openai.Options{BaseURL: url, APIKey: key, Dialect: openai.VLLM, Model: basemodel.Name})
	require.NoError(t, err, "the probe accepts tandem serve's log-probs")

	// An adapter one training step away from the base, as a PEFT folder.
	base, err := basemodel.Load()
	require.NoError(t, err)
	tr, err := engine.NewTrainer(base, engine.DefaultLoraConfig(), engine.TrainerOptions{})
	require.NoError(t, err)
	ids := arithmetic.Problem{A: 12, B: 35}.PromptTokens()
	ans := append(append([]int(nil), ids...), 3, 23, 19, engine.Newline)
	_, err = tr.ForwardBackward(ctx, []engine.Example{{Input: ans[:len(ans)-1], Targets: ans[1:]}}, engine.LossSpec{Name: engine.CrossEntropy})
	require.NoError(t, err)
	_, err = tr.OptimStep(engine.AdamParams{LearningRate: 5e-2})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "v1")
	require.NoError(t, tr.SaveAdapter(dir))

	scorer, err := engine.NewSampler(base, engine.SamplerOptions{})
	require.NoError(t, err)
	seed := int64(5)
	p := rl.SamplingParams{MaxTokens: 6, Temperature: 1, Seed: &seed, StopTokens: []int{engine.Newline, engine.EOS}}
	check := func(want policy.Version) {
		t.Helper()
		pp := p
		pp.PromptLogprobs = true
		out, err := s.Sample(ctx, rl.Tokens(ids), 3, pp)
		require.NoError(t, err)
		assert.Equal(t, want, out.Version)
		plp, err := scorer.ComputeLogprobs(ctx, ids)
		require.NoError(t, err)
		require.Len(t, out.PromptLogprobs, len(ids))
		for j := 1; j < len(ids); j++ {
			assert.InDelta(t, plp[j], out.PromptLogprobs[j], 1e-4, "version %d prompt token %d", want, j)
		}
		require.Len(t, out.Sequences, 3)
		for _, sq := range out.Sequences {
			require.Len(t, sq.Logprobs, len(sq.Tokens))
			full := append(append([]int(nil), ids...), sq.Tokens...)
			lp, err := scorer.ComputeLogprobs(ctx, full)
			require.NoError(t, err)
			for j, x := range sq.Logprobs {
				assert.LessOrEqual(t, math.Abs(x-lp[len(ids)+j]), 1e-4, "version %d token %d", want, j)
			}
		}
	}
	check(0)
	require.NoError(t, s.Load(ctx, policy.Ref{Run: "r", URI: dir, Version: 1}))
	require.NoError(t, scorer.SetAdapter(tr.Adapter()))
	check(1)

}
