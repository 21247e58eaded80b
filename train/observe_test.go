package train

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/progress"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/reward/plugin"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/runlog"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// randomSteps returns n steps with random staleness histograms, rewards,
// gaps (some invalid) and growing drop counts.
func randomSteps(rng *rand.Rand, n int) []loop.StepMetrics {
	out := make([]loop.StepMetrics, n)
	var dropped, requeued int64
	for i := range out {
		hist := make([]int, 1+rng.IntN(3))
		maxSt := 0
		for s := range hist {
			hist[s] = rng.IntN(4)
			if hist[s] > 0 {
				maxSt = s
			}
		}
		dropped += int64(rng.IntN(2))
		requeued += int64(rng.IntN(2))
		out[i] = loop.StepMetrics{Step: i, Version: policy.Version(i + 1), Staleness: hist, MaxStaleness: maxSt,
			MeanReward: rng.Float64(), LogprobGap: rng.Float64(), LogprobGapValid: rng.IntN(3) > 0,
			Dropped: dropped, Requeued: requeued, Samples: 8 * (1 + rng.IntN(4)), Tokens: 100 + rng.IntN(100),
			Metrics: map[string]float64{"loss:sum": rng.NormFloat64()}, Total: time.Duration(1+rng.IntN(1000)) * time.Millisecond}
	}
	return out
}

func TestTotalsMatchANaiveSummary(t *testing.T) {
	t.Parallel()
	steps := randomSteps(rand.New(rand.NewPCG(1, 2)), 30)
	var tot totals
	for _, m := range steps {
		tot.add(m)
	}
	var got Summary
	tot.fill(&got)

	// Naive: every group's staleness listed, then averaged.
	var stale []int
	var gaps []float64
	want := Summary{}
	for _, m := range steps {
		for s, n := range m.Staleness {
			for range n {
				stale = append(stale, s)
			}
		}
		if m.LogprobGapValid {
			gaps = append(gaps, m.LogprobGap)
		}
		want.MaxStalenessSeen = max(want.MaxStalenessSeen, m.MaxStaleness)
		want.Samples += m.Samples
	}
	last := steps[len(steps)-1]
	want.Dropped, want.Requeued, want.FinalReward = last.Dropped, last.Requeued, last.MeanReward
	for _, s := range stale {
		want.MeanStaleness += float64(s) / float64(len(stale))
	}
	for _, g := range gaps {
		want.MeanLogprobGap += g / float64(len(gaps))
	}
	require.NotEmpty(t, stale)
	assert.InDelta(t, want.MeanStaleness, got.MeanStaleness, 1e-12)
	assert.InDelta(t, want.MeanLogprobGap, got.MeanLogprobGap, 1e-12)
	got.MeanStaleness, got.MeanLogprobGap = want.MeanStaleness, want.MeanLogprobGap
	assert.Equal(t, want, got)

	var empty totals
	var s Summary
	empty.fill(&s)
	assert.Equal(t, Summary{}, s, "no steps, no figures")
}

func TestRecordCarriesTheStep(t *testing.T) {
	t.Parallel()
	m := loop.StepMetrics{Step: 3, Version: 4, Served: 2, Staleness: []int{5, 0, 3}, MaxStaleness: 2, MeanReward: 0.5,
		LogprobGap: 0.01, LogprobGapValid: true, Dropped: 1, Requeued: 2, Samples: 64, Tokens: 640,
		Metrics: map[string]float64{"loss:sum": 1.5, "advantage:mean": 0},
		Wait:    time.Second, Train: 2 * time.Second, Publish: 500 * time.Millisecond, Total: 4 * time.Second}
	rec := record(m, 12.5)
	require.NoError(t, rec.Validate())
	assert.Equal(t, runlog.Record{Step: 3, Version: 4, Seconds: 12.5, RewardMean: 0.5, Loss: 1.5,
		Staleness: map[int]int{0: 5, 2: 3}, MaxStaleness: 2, Dropped: 1, Requeued: 2, LogprobGap: 0.01,
		Samples: 64, Tokens: 640, TokensPerSec: 160, SamplesPerSec: 16, ServedVersion: 2,
		Extra: map[string]float64{"loss:sum": 1.5, "advantage:mean": 0, "time:wait_s": 1, "time:train_s": 2, "time:publish_s": 0.5}}, rec)

	m.LogprobGapValid, m.Total = false, 0
	rec = record(m, 1)
	assert.Zero(t, rec.LogprobGap, "an invalid gap is not logged")
	assert.Zero(t, rec.TokensPerSec, "no rate without a duration")
}

func TestObserverLogsReportsAndMarksVersions(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.RL.Steps, cfg.EvalEvery = 5, 2
	rlog, err := runlog.Open(t.TempDir(), cfg)
	require.NoError(t, err)
	defer rlog.Close()
	var seen []progress.Status
	var logs []string
	o := newObserver(cfg, rlog, Hooks{Progress: func(s progress.Status) { seen = append(seen, s) },
		Log: func(m string) { logs = append(logs, m) }})
	steps := randomSteps(rand.New(rand.NewPCG(3, 4)), cfg.RL.Steps)
	steps[1].Checkpoint = &policy.Ref{URI: "tinker://arith-grpo/weights/step-2"}
	for _, m := range steps {
		o.observe(m)
	}
	assert.Len(t, rlog.Records(), len(steps))
	require.Len(t, seen, len(steps))
	for i, s := range seen {
		assert.Equal(t, i+1, s.Step)
		assert.Equal(t, cfg.RL.Steps, s.Total)
		assert.Equal(t, steps[i].MeanReward, s.Reward)
	}
	assert.Equal(t, []string{"step 2: saved tinker://arith-grpo/weights/step-2"}, logs)
	var marked []int
	for _, pt := range o.snapshotList() {
		marked = append(marked, pt.Step)
		assert.Equal(t, steps[pt.Step-1].Version, pt.Version)
	}
	assert.Equal(t, []int{2, 4, 5}, marked, "every EvalEvery steps and the last")
}

type fakeScorer struct{ got []plugin.Request }

func (f *fakeScorer) Score(_ context.Context, req plugin.Request) (float64, error) {
	f.got = append(f.got, req)
	return 0.5, nil
}

func TestRewardIsTheTasksPlusThePlugin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := arithmetic.Problem{A: 1, B: 2}
	s := reward.Sample{Prompt: p.PromptTokens(), Text: " 3\n", Reference: p.Reference()}
	f := &fakeScorer{}
	fn := arithmetic.Reward(DefaultConfig().FormatWeight, pluginTerm(2, f, arithmetic.Decode))
	got, err := fn(ctx, s)
	require.NoError(t, err)
	assert.InDelta(t, 1+DefaultConfig().FormatWeight+2*0.5, got, 1e-12)
	assert.Equal(t, []plugin.Request{{Prompt: p.Prompt(), Completion: " 3\n", Answer: "3"}}, f.got, "the plugin sees the prompt's text")

	assert.Equal(t, arithmetic.FormatWeight, DefaultConfig().FormatWeight, "the job's default is the task's")
	plain, stop, err := newReward(DefaultConfig(), &model{w: arithmetic.Char{}, decodePrompt: arithmetic.Decode})
	require.NoError(t, err)
	defer stop()
	got, err = plain(ctx, s)
	require.NoError(t, err)
	assert.InDelta(t, 1+arithmetic.FormatWeight, got, 1e-12)
}

func TestRunNamesTheFailingStep(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.BaseModel = filepath.Join(cfg.Dir, "missing.safetensors")
	_, err := Run(context.Background(), cfg, Hooks{})
	assert.ErrorContains(t, err, "train: base model: ")

	cfg = DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.Samplers = 100
	_, err = Run(context.Background(), cfg, Hooks{})
	assert.ErrorContains(t, err, "train: config: samplers 100")
}
