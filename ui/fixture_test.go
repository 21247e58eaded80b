package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/runlog"
)

// fixture describes one run folder to generate.
type fixture struct {
	name      string
	steps     int
	evalEvery int    // summary evaluations every this many steps (0: none)
	summary   string // "", "ok", "failed" (no evals), "garbage"
	old       bool   // metrics last written an hour ago
	tail      string // appended verbatim after the records (bad lines)
	objective string
	lr        float64
	ckpt      bool
}

// record is a synthetic metrics line of step i.
func record(i int) runlog.Record {
	return runlog.Record{
		Step: i, Version: int64(i + 1), Seconds: float64(i) * 0.25, RewardMean: float64(i%17) / 10,
		Staleness: map[int]int{0: 8 + i%3, 1: 4, 2: i % 2}, MaxStaleness: 2, Dropped: i % 3, Requeued: i % 2, Filtered: i % 5,
		LogprobGap: 0.01 * float64(i%7), Samples: 128, Tokens: 800, TokensPerSec: 3000 + float64(i%11), SamplesPerSec: 500 + float64(i%13),
		ServedVersion: int64(max(i-1, 0)), Extra: map[string]float64{"loss:sum": 1.5, "time:wait_s": 0.01, "advantage:mean": 0.02},
	}
}

// write creates the fixture's folder under root and returns its path.
func (f fixture) write(t testing.TB, root string) string {
	t.Helper()
	dir := filepath.Join(root, f.name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	obj := f.objective
	if obj == "" {
		obj = "ppo"
	}
	cfg := map[string]any{"name": f.name, "rl": map[string]any{"steps": f.steps, "adam": map[string]any{"learning_rate": f.lr}}, "algo": map[string]any{"objective": obj}}
	writeJSON(t, filepath.Join(dir, runlog.ConfigFile), cfg)
	mf, err := os.Create(filepath.Join(dir, runlog.MetricsFile))
	require.NoError(t, err)
	enc := json.NewEncoder(mf) // one line per record, as runlog writes
	for i := range f.steps {
		require.NoError(t, enc.Encode(record(i)))
	}
	_, err = mf.WriteString(f.tail)
	require.NoError(t, err)
	require.NoError(t, mf.Close())
	switch f.summary {
	case "ok":
		var evals []map[string]any
		for s := f.evalEvery; f.evalEvery > 0 && s <= f.steps; s += f.evalEvery {
			evals = append(evals, map[string]any{"step": s, "version": s, "accuracy": float64(s) / float64(2*f.steps)})
		}
		writeJSON(t, filepath.Join(dir, SummaryFile), map[string]any{"steps": f.steps, "final_accuracy": 0.5, "wall_seconds": 99.0, "evals": evals})
	case "failed":
		writeJSON(t, filepath.Join(dir, SummaryFile), map[string]any{"steps": f.steps / 2, "wall_seconds": 3.0})
	case "garbage":
		require.NoError(t, os.WriteFile(filepath.Join(dir, SummaryFile), []byte("{not json"), 0o644))
	}
	if f.old {
		then := time.Now().Add(-time.Hour)
		for _, n := range []string{runlog.ConfigFile, runlog.MetricsFile} {
			require.NoError(t, os.Chtimes(filepath.Join(dir, n), then, then))
		}
	}
	if f.ckpt {
		writeCheckpoint(t, filepath.Join(dir, CheckpointsDir), f.name, "final", 7)
	}
	return dir
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// writeCheckpoint lays out one checkpoint in the store at root by hand:
// one file and its manifest.
func writeCheckpoint(t testing.TB, root, run, name string, version int) {
	t.Helper()
	dir := filepath.Join(root, run, string(policy.SamplerWeights), name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	data := []byte("adapter bytes")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), data, 0o644))
	sum := sha256.Sum256(data)
	m := checkpoint.Manifest{Format: 1, Meta: checkpoint.Meta{Run: run, Name: name, Kind: policy.SamplerWeights,
		Version: policy.Version(version), Step: int64(version), Created: time.Unix(1700000000, 0).UTC()},
		Files: []checkpoint.File{{Name: "adapter_model.safetensors", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}}}
	b, err := m.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, checkpoint.ManifestName), b, 0o644))
}

// fixtures are the runs of the list tests.
var fixtures = []fixture{
	{name: "done", steps: 40, evalEvery: 10, summary: "ok", ckpt: true, lr: 0.002},
	{name: "live", steps: 12},
	{name: "crashed", steps: 9, old: true},
	{name: "broke", steps: 20, summary: "failed", objective: "naive"},
	{name: "torn", steps: 15, summary: "garbage", tail: "{\"step\":15,\"rew"},
	{name: "noisy", steps: 30, evalEvery: 15, summary: "ok", tail: "not json\n{\"step\":-1}\n", lr: 0.01},
}

// newFixtureHandler writes every fixture under a new folder and returns a
// handler over it.
func newFixtureHandler(t *testing.T, opts Options) (*Handler, string) {
	t.Helper()
	root := t.TempDir()
	for _, f := range fixtures {
		f.write(t, root)
	}
	h, err := New(root, opts)
	require.NoError(t, err)
	return h, root
}
