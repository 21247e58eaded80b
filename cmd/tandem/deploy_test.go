package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// deploy to a tandem serve sampler: the adapter registers under its name
// and the server's log-probs of the probe equal the trainer's (≤ 1e-4);
// for -kind vllm an lm_head adapter is refused before anything is sent,
// and one vLLM takes registers too.
func TestDeployToServe(t *testing.T) {
	t.Parallel()
	const key = "test-key-deploy-123456"
	ctx := t.Context()
	url := startServe(t, "-api-key", key, "-store", t.TempDir(), "-threads", "1", "-role", "sampler")

	base, err := basemodel.Load()
	require.NoError(t, err)
	adapter := func(lora engine.LoraConfig) string {
		tr, err := engine.NewTrainer(base, lora, engine.TrainerOptions{})
		require.NoError(t, err)
		ids := append(arithmetic.Problem{A: 3, B: 4}.PromptTokens(), 3, 24, engine.Newline)
		_, err = tr.ForwardBackward(ctx, []engine.Example{{Input: ids[:len(ids)-1], Targets: ids[1:]}}, engine.LossSpec{Name: engine.CrossEntropy})
		require.NoError(t, err)
		_, err = tr.OptimStep(engine.AdamParams{LearningRate: 5e-2})
		require.NoError(t, err)
		dir := filepath.Join(t.TempDir(), "adapter")
		require.NoError(t, tr.SaveAdapter(dir))
		return dir
	}
	all := adapter(engine.DefaultLoraConfig()) // lm_head included
	out, _, err := runCLI("deploy", "-checkpoint", all, "-to", url, "-api-key", key, "-name", "all-v1")
	require.NoError(t, err)
	var res deployResult
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &res))
	assert.Equal(t, "all-v1", res.Name)
	assert.Greater(t, res.ProbeTokens, 5)
	assert.LessOrEqual(t, res.MaxGap, 1e-4)
	t.Logf("deploy to tandem: %s", out)

	_, _, err = runCLI("deploy", "-checkpoint", all, "-to", url, "-api-key", key, "-kind", "vllm")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lm_head.lora_A.weight is unsupported")
	vllmOK := adapter(engine.LoraConfig{Rank: 8, Alpha: 16, TrainAttn: true, TrainMLP: true})
	out, _, err = runCLI("deploy", "-checkpoint", vllmOK, "-to", url, "-api-key", key, "-kind", "vllm", "-name", "attn-mlp-v1")
	require.NoError(t, err, "the vLLM dialect against tandem serve")
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &res))
	assert.LessOrEqual(t, res.MaxGap, 1e-4)

	for args, want := range map[*[]string]string{
		{"deploy", "-to", url}: "-checkpoint and -to are required",
		{"deploy", "-checkpoint", all, "-to", url, "-kind", "x"}:                "want vllm, sglang or tandem",
		{"deploy", "-checkpoint", all, "-to", url, "-api-key", "wrong-key-000"}: "401",
	} {
		_, _, err := runCLI(*args...)
		require.Error(t, err, *args)
		assert.Contains(t, err.Error(), want, *args)
	}
}
