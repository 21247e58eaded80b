package train

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/engine/safetensors"
	"github.com/tandemrl/tandem/ledger"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/runlog"
)

func TestParseConfigErrorsNameTheProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"rl": {"max_stalenes": 2}}`, `unknown key "max_stalenes"`},
		{`{"rl": {"max_staleness": "two"}}`, `field "rl.max_staleness": got a JSON string, want int`},
		{`{"rl": {"max_staleness": -1}}`, "MaxStaleness"},
		{`{"rl": {"group_size": 0}}`, "GroupSize"},
		{`{"rl": {"stale_policy": "sometimes"}}`, "StalePolicy"},
		{`{"rl": {"groups_per_batch": 8, "buffer_limit": 4}}`, "BufferLimit"},
		{"{\n  \"name\": \"x\",\n  \"steps\" 3\n}", "config line 3"},
		{`{"task": "chess"}`, `task "chess" unknown`},
		{`{"samplers": 100}`, "samplers 100"},
		{`{"reward_plugin": {"weight": 1}}`, "exactly one of command and url"},
		{`{"lora": {"rank": 0, "train_attn": true}}`, "rank 0"},
		{`{"model": "m", "weights": "fp8"}`, `weights "fp8" unknown; allowed: stored (default), float32`},
		{`{"weights": "float32"}`, `weights "float32" needs model`},
		{`{"samples_every": -1}`, "samples_every -1"},
		{`{} {}`, "extra data"},
		{"{\n  \"name\": \"x\",\n  \"task\": \"arithmetic\",\n  \"rl\": {\n    \"max_staleness\": \"two\"\n  }\n}", `config line 5: field "rl.max_staleness"`},
		{"{\n  \"rl\":\n    5\n}", `config line 3: field "rl": got a JSON number, want rl.Config`},
		{`{"rl": {"sampling": {"max_tokenz": 3}}}`, `unknown key "max_tokenz"`},
		// Keys that moved to the algo config say where.
		{`{"rl": {"correction": "tis"}}`, `rl: key "correction" is no longer read here; it moved to the algo config's "objective" (naive, ppo, tis, decoupled)`},
		{`{"rl": {"kl_coef": 0.5}}`, `rl: key "kl_coef" is no longer read here; it moved to the algo config's "kl_coef"`},
		{`{"rl": {"loss": {"loss_fn": "cispo"}}}`, `rl: key "loss" is no longer read here; it moved to the algo config's "objective"`},
		{`{"rl":{"correction":"tis","kl_coef":0.5,"loss":{"loss_fn":"cispo"}}}`, `key "correction" is no longer read here`},
	} {
		_, err := ParseConfig([]byte(tc.in))
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.want, tc.in)
	}
	c, err := ParseConfig([]byte(`{"rl": {"max_staleness": 0, "steps": 3}}`))
	require.NoError(t, err)
	assert.Equal(t, 0, c.RL.MaxStaleness, "an explicit zero overrides the default")
	assert.Equal(t, 3, c.RL.Steps)
	assert.Equal(t, DefaultConfig().RL.GroupsPerBatch, c.RL.GroupsPerBatch)

	// The algorithm's settings are read from the algo object.
	c, err = ParseConfig([]byte(`{"algo": {"objective": "tis", "kl_coef": 0.5}}`))
	require.NoError(t, err)
	assert.Equal(t, algo.Config{Objective: algo.TIS, KLCoef: 0.5}, c.Algo)
	assert.Equal(t, DefaultConfig().RL, c.RL)
}

// TestConfigFileRoundTrip: a run folder's config.json (the job as JSON)
// reads back as the same job, so it sets no key that moved.
func TestConfigFileRoundTrip(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Algo.KLCoef, c.Algo.Objective, c.RL.Substeps = 0.1, algo.Decoupled, 2
	b, err := json.MarshalIndent(c, "", "  ")
	require.NoError(t, err)
	back, err := ParseConfig(b)
	require.NoError(t, err)
	assert.Equal(t, c, back)
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"rl": {"max_staleness": 1}}`))
	f.Add([]byte(`{"name": "x", "rl": {"steps": 2}, "algo": {"objective": "ppo", "kl_coef": 0.1}}`))
	f.Add([]byte(`{"rl": {"steps": 2, "loss": {"loss_fn": "ppo"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err == nil {
			require.NoError(t, c.Validate())
		}
	})
}

// tinyBase writes a small random base model to a temp file.
func tinyBase(t *testing.T) string {
	t.Helper()
	m := enginetest.Model(t, 1, 48, 3)
	path := filepath.Join(t.TempDir(), "tiny.safetensors")
	require.NoError(t, engine.SaveBase(path, m, safetensors.F32))
	return path
}

func TestRunWritesTheRunFolder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BaseModel = tinyBase(t)
	cfg.Dir = t.TempDir()
	cfg.RL.GroupsPerBatch, cfg.RL.GroupSize, cfg.RL.Steps, cfg.RL.SaveEvery = 2, 4, 4, 2
	cfg.RL.Sampling.MaxTokens = 6
	cfg.EvalEvery, cfg.EvalProblems = 2, 5
	var logs []string
	sum, err := Run(context.Background(), cfg, Hooks{Log: func(m string) { logs = append(logs, m) }})
	require.NoError(t, err)
	assert.Equal(t, 4, sum.Steps)
	assert.LessOrEqual(t, sum.MaxStalenessSeen, cfg.RL.MaxStaleness)
	require.Len(t, sum.Evals, 2)
	assert.Equal(t, 4, sum.Evals[1].Step)
	assert.Equal(t, sum.Evals[1].Accuracy, sum.FinalAccuracy)
	assert.Equal(t, 5, sum.HeldOutProblems)

	recs, err := runlog.ReadMetricsFile(filepath.Join(sum.Dir, runlog.MetricsFile))
	require.NoError(t, err)
	assert.Len(t, recs, 4)
	for _, f := range []string{"config.json", "summary.json", "ledger.jsonl", "plots/reward.png", "plots/staleness.svg", "plots/throughput.png"} {
		_, err := os.Stat(filepath.Join(sum.Dir, f))
		assert.NoError(t, err, f)
	}
	// The ledger: one line per prompt handed out, each hand-out with its
	// outcome, and the groups trained are the steps' groups.
	require.NotNil(t, sum.Ledger)
	b, err := os.ReadFile(filepath.Join(sum.Dir, "ledger.jsonl"))
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	var entries []ledger.Entry
	for dec.More() {
		var e ledger.Entry
		require.NoError(t, dec.Decode(&e))
		assert.Equal(t, e.HandedOut, e.Outcomes(), "%+v", e)
		entries = append(entries, e)
	}
	assert.Len(t, entries, sum.Ledger.Prompts)
	assert.Equal(t, 4*2, sum.Ledger.Totals.Trained, "4 steps of 2 groups")
	// samples.jsonl: every rollout trained, as text, with its version and
	// staleness at the step that trained it.
	b, err = os.ReadFile(filepath.Join(sum.Dir, runlog.SamplesFile))
	require.NoError(t, err)
	perStep := map[int]int{}
	dec = json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var s runlog.Sample
		require.NoError(t, dec.Decode(&s))
		require.NoError(t, s.Validate())
		perStep[s.Step]++
		assert.Contains(t, s.Prompt, "What is", "the prompt as text")
		assert.LessOrEqual(t, s.Staleness, cfg.RL.MaxStaleness)
		assert.Equal(t, int64(s.Step)-int64(s.Staleness), s.Version, "staleness is the step's version minus the group's")
		assert.Less(t, s.Group, 2)
	}
	assert.Equal(t, map[int]int{0: 8, 1: 8, 2: 8, 3: 8}, perStep, "2 groups of 4 per step")
	// Periodic and final checkpoints.
	for _, p := range []string{"arith-grpo/weights/arith-grpo-step-000002", "arith-grpo/weights/final", "arith-grpo/sampler_weights/final"} {
		_, err := os.Stat(filepath.Join(sum.Dir, "checkpoints", p, "manifest.json"))
		assert.NoError(t, err, p)
	}
	assert.Equal(t, filepath.Join(sum.Dir, "checkpoints/arith-grpo/sampler_weights/final"), sum.Checkpoint)

	// A second run with the same name gets its own folder.
	sum2, err := Run(context.Background(), cfg, Hooks{})
	require.NoError(t, err)
	assert.Equal(t, sum.Dir+"-2", sum2.Dir)
}

func TestRunKeepsCheckpointWhenRewardPluginFails(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BaseModel = tinyBase(t)
	cfg.Dir = t.TempDir()
	cfg.RL.GroupsPerBatch, cfg.RL.GroupSize, cfg.RL.Steps = 2, 2, 3
	cfg.RL.Sampling.MaxTokens = 4
	cfg.RL.FailureLimit = 3
	cfg.RewardPlugin = &PluginConfig{Command: []string{"sh", "-c", "read line; echo 'not json'; exit 1"}, Weight: 1}
	sum, err := Run(context.Background(), cfg, Hooks{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run folder")
	_, serr := os.Stat(filepath.Join(sum.Dir, "checkpoints", "arith-grpo", "weights", "final", "manifest.json"))
	assert.NoError(t, serr, "the last completed step's state is kept")
	_, serr = os.Stat(filepath.Join(sum.Dir, "summary.json"))
	assert.NoError(t, serr)
}
