package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/engine/safetensors"
)

func tinyBase(t *testing.T) string {
	t.Helper()
	m := enginetest.Model(t, 1, 48, 3)
	path := filepath.Join(t.TempDir(), "tiny.safetensors")
	require.NoError(t, engine.SaveBase(path, m, safetensors.F32))
	return path
}

func runCLI(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// decodeSummary decodes the last line of a command's output (train's JSON
// summary) into v.
func decodeSummary(t *testing.T, out string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), v), "the last line of the output is the JSON summary")
}

func TestTrainPrintsSummaryLastThenSampleAndListWork(t *testing.T) {
	base, dir := tinyBase(t), t.TempDir()
	out, _, err := runCLI("train", "-base", base, "-dir", dir, "-steps", "2", "-groups", "2", "-group-size", "2",
		"-max-tokens", "4", "-eval-problems", "3", "-eval-every", "1", "-quiet")
	require.NoError(t, err)
	var sum map[string]any
	decodeSummary(t, out, &sum)
	for _, k := range []string{"base_accuracy", "final_accuracy", "wall_seconds", "steps", "max_staleness_seen", "accuracy_measure"} {
		assert.Contains(t, sum, k)
	}
	assert.EqualValues(t, 2, sum["steps"])

	store := filepath.Join(sum["dir"].(string), "checkpoints")
	out, _, err = runCLI("checkpoints", "list", "-store", store)
	require.NoError(t, err)
	assert.Contains(t, out, "tinker://arith-grpo/sampler_weights/final")

	out, _, err = runCLI("sample", "-base", base, "-checkpoint", "tinker://arith-grpo/sampler_weights/final", "-store", store, "-n", "2", "-max-tokens", "3", "-json")
	require.NoError(t, err)
	var smp struct{ Samples []any }
	require.NoError(t, json.Unmarshal([]byte(out), &smp))
	assert.Len(t, smp.Samples, 2)

	exp := filepath.Join(t.TempDir(), "peft")
	out, _, err = runCLI("checkpoints", "export", "-store", store, "-uri", "tinker://arith-grpo/sampler_weights/final", "-to", exp)
	require.NoError(t, err)
	assert.Contains(t, out, "adapter_config.json")
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fly"}, `unknown command "fly"`},
		{[]string{"train", "-steps", "x"}, "invalid value"},
		{[]string{"train", "-max-staleness", "-1"}, "MaxStaleness"},
		{[]string{"train", "-stale-policy", "sometimes"}, "StalePolicy"},
		{[]string{"train", "-config", "/nonexistent.json"}, "no such file"},
		{[]string{"train", "extra"}, `unexpected argument "extra"`},
		{[]string{"checkpoints"}, "say list"},
		{[]string{"checkpoints", "list"}, "-store is required"},
		{[]string{"sample", "-checkpoint", "tinker://r/sampler_weights/x"}, "-store"},
		{[]string{"sample", "-prompt", "héllo", "-base", "/nonexistent"}, "nonexistent"},
	} {
		_, _, err := runCLI(tc.args...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}
