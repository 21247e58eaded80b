package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/train"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	for _, xs := range [][]float64{{}, {3}, {1, 2}, {0.5, 0.25, 0.75, 1}} {
		s := summarize(xs)
		require.Equal(t, len(xs), s.N)
		if len(xs) == 0 {
			assert.Equal(t, Stat{}, s)
			continue
		}
		// Naive reference: two passes, sample variance.
		var sum float64
		lo, hi := xs[0], xs[0]
		for _, x := range xs {
			sum += x
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		mean := sum / float64(len(xs))
		var ss float64
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		std := 0.0
		if len(xs) > 1 {
			std = math.Sqrt(ss / float64(len(xs)-1))
		}
		assert.InDelta(t, mean, s.Mean, 1e-12)
		assert.InDelta(t, std, s.Std, 1e-12)
		assert.Equal(t, lo, s.Min)
		assert.Equal(t, hi, s.Max)
	}
}

// With σ = 0 every generation takes the median, so a replica running
// ceil(jobs/slots) rounds finishes after that many medians.
func TestIdealTimesDeterministic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		groups, replicas, slots int
		trainer                 time.Duration
	}{
		{8, 2, 2, 50 * time.Millisecond},  // 4 jobs per replica, 2 rounds: S < T
		{8, 1, 8, 5 * time.Millisecond},   // 1 round: S > T
		{9, 2, 2, 100 * time.Millisecond}, // replica 0 gets 5 jobs: 3 rounds
	} {
		s := ThroughputSettings{Steps: 10, GroupsPerBatch: tc.groups, Replicas: tc.replicas, Slots: tc.slots,
			TrainerTime: tc.trainer, GenMedian: 10 * time.Millisecond, Seed: 3}
		id := idealTimes(s, 5)
		jobs := (tc.groups + tc.replicas - 1) / tc.replicas
		rounds := (jobs + tc.slots - 1) / tc.slots
		S := float64(rounds) * 0.010
		T := tc.trainer.Seconds()
		assert.InDelta(t, S, id.BatchSeconds, 1e-12, "%+v", tc)
		assert.InDelta(t, 10*(T+S), id.SyncRunSeconds, 1e-12)
		assert.InDelta(t, 10*math.Max(T, S)+S, id.AsyncRunSeconds, 1e-12)
		assert.InDelta(t, id.SyncRunSeconds/id.AsyncRunSeconds, id.Speedup, 1e-12)
	}
}

// A long tail makes the batch slower than the median round count says.
func TestIdealTimesTail(t *testing.T) {
	t.Parallel()
	s := ThroughputSettings{Steps: 10, GroupsPerBatch: 16, Replicas: 2, Slots: 8, TrainerTime: time.Millisecond,
		GenMedian: 10 * time.Millisecond, GenSigma: 0.6, Seed: 1}
	id := idealTimes(s, 2000)
	assert.Greater(t, id.BatchSeconds, 0.010*math.Exp(0.6)) // max of 8 draws per replica, two replicas
	assert.Less(t, id.BatchSeconds, 0.010*math.Exp(0.6*4))
}

func TestScore(t *testing.T) {
	t.Parallel()
	tab := ThroughputTable{
		Settings: ThroughputSettings{Steps: 10, Tolerance: 0.05},
		Ideal:    Ideal{SyncRunSeconds: 4, AsyncRunSeconds: 2, Speedup: 2},
		Cells: []ThroughputCell{
			{Policy: rl.Drop, K: 0, StepsPerSecond: 3},
			{Policy: rl.Drop, K: 1, StepsPerSecond: 4.9},
			{Policy: rl.Pace, K: 0, StepsPerSecond: 2.5},
			{Policy: rl.Pace, K: 1, StepsPerSecond: 5},
			{Policy: rl.Pace, K: 2, StepsPerSecond: 4},
		},
	}
	tab.score()
	assert.Equal(t, "pace k=0", tab.SyncReference)
	ref := 2.5
	for _, c := range tab.Cells {
		assert.InDelta(t, c.StepsPerSecond/ref, c.Speedup, 1e-12)
		ideal := 1.0
		idealRate := 10 / tab.Ideal.SyncRunSeconds
		if c.K > 0 {
			ideal, idealRate = 2, 10/tab.Ideal.AsyncRunSeconds
		}
		assert.InDelta(t, ideal, c.IdealSpeedup, 1e-12)
		assert.InDelta(t, c.StepsPerSecond/idealRate, c.Efficiency, 1e-12)
		assert.Equal(t, math.Abs(c.StepsPerSecond/ref/ideal-1) <= 0.05, c.WithinTolerance, "%+v", c)
	}
	assert.InDelta(t, 4.9/3, tab.Cells[1].OwnSpeedup, 1e-12)
	assert.False(t, tab.PaceWithin) // pace k=2: 4/2.5 = 1.6, 20% off
	assert.False(t, tab.AllWithin)

	tab.Cells = tab.Cells[:4]
	tab.score()
	assert.True(t, tab.PaceWithin)
	assert.True(t, tab.AllWithin) // drop k=1: 4.9/2.5/2 = 0.98
}

func TestAggregateLearning(t *testing.T) {
	t.Parallel()
	ttt := 12.0
	runs := []LearningRun{
		{Seed: 1, FinalAccuracy: 0.6, MaxStalenessSeen: 2, TimeToTargetSeconds: &ttt, Dropped: 4},
		{Seed: 2, FinalAccuracy: 0.8, MaxStalenessSeen: 3},
	}
	c := aggregateLearning(4, algo.TIS, runs)
	assert.Equal(t, 4, c.K)
	assert.InDelta(t, 0.7, c.FinalAccuracy.Mean, 1e-12)
	assert.InDelta(t, math.Sqrt(0.02), c.FinalAccuracy.Std, 1e-12)
	assert.Equal(t, 3, c.MaxStalenessSeen)
	assert.Equal(t, 1, c.Reached)
	assert.Equal(t, Stat{Mean: 12, Min: 12, Max: 12, N: 1}, c.TimeToTarget)
	assert.InDelta(t, 2.0, c.Dropped.Mean, 1e-12)
	md := LearningTable{Settings: LearningSettings{TargetAccuracy: 0.5}, Cells: []LearningCell{c}}.Markdown()
	assert.Contains(t, md, "| 4 | tis | 0.700 ± 0.141 |")
	assert.NotContains(t, md, "behaviour")
	md = LearningTable{Settings: LearningSettings{TargetAccuracy: 0.5, BehaviourCap: 2}, Cells: []LearningCell{c}}.Markdown()
	assert.Contains(t, md, "decoupled's behaviour cap 2,")
	assert.Contains(t, md, "12.0 (1/2 reached)")
}

// fakeTrain stands in for train.Run: it checks the job the sweep built and
// returns numbers derived from it.
func fakeTrain(t *testing.T, s LearningSettings) trainFunc {
	return func(_ context.Context, cfg train.Config) (train.Summary, error) {
		assert.Equal(t, s.Steps, cfg.RL.Steps)
		assert.Equal(t, s.Substeps, cfg.RL.Substeps)
		assert.Equal(t, s.BehaviourCap, cfg.Algo.BehaviourCap)
		assert.Equal(t, s.GroupsPerBatch, cfg.RL.GroupsPerBatch)
		assert.Equal(t, s.StalePolicy, cfg.RL.StalePolicy)
		assert.Equal(t, s.EvalProblems, cfg.EvalProblems)
		assert.Zero(t, cfg.RL.SaveEvery)
		require.NoError(t, cfg.Validate())
		k := cfg.RL.MaxStaleness
		acc := 0.9 - 0.01*float64(k) - 0.001*float64(cfg.RL.Seed)
		secs := 1.0 + float64(k)
		return train.Summary{BaseAccuracy: 0.35, FinalAccuracy: acc, TrainSeconds: secs, TimeToTargetSeconds: &secs,
			SamplesPerSecond: 100, MeanStaleness: float64(k) / 2, MaxStalenessSeen: k, MeanLogprobGap: 0.01 * float64(k)}, nil
	}
}

func tinyOptions(out string) Options {
	ls := LearningSettings{Ks: []int{0, 2}, Objectives: []algo.Objective{algo.Naive, algo.Decoupled}, Seeds: []int64{1, 2}, BehaviourCap: 3,
		Steps: 3, GroupsPerBatch: 2, GroupSize: 2, Substeps: 2, StalePolicy: rl.Pace, EvalProblems: 5, EvalEvery: 1,
		TargetAccuracy: 0.5, LearningRate: 2e-3, TrainerThreads: 1, SamplerThreads: 1}
	ts := ThroughputSettings{Ks: []int{0, 1}, Policies: []rl.StalePolicy{rl.Drop, rl.Pace}, Steps: 3, GroupsPerBatch: 4,
		GroupSize: 2, TrainerTime: 2 * time.Millisecond, GenMedian: time.Millisecond, GenSigma: 0.5, Replicas: 2, Slots: 2,
		Seed: 1, Tolerance: 0.05}
	return Options{Mode: "test", Out: out, Learning: ls, Throughput: ts}
}

// The plumbing end to end on tiny settings: tables, JSON files, plots and
// the combined result, with a fake learning run and a real (millisecond)
// throughput sweep.
func TestRunWritesEverything(t *testing.T) {
	defer goleak.VerifyNone(t)
	out := t.TempDir()
	opts := tinyOptions(out)
	var lines []string
	res, err := run(context.Background(), opts, fakeTrain(t, opts.Learning), func(s string) { lines = append(lines, s) })
	require.NoError(t, err)

	require.NotNil(t, res.Learning)
	require.NotNil(t, res.Throughput)
	require.Len(t, res.Learning.Cells, 4)
	require.Len(t, res.Throughput.Cells, 4)
	for _, c := range res.Learning.Cells {
		assert.Equal(t, 2, c.FinalAccuracy.N)
		assert.InDelta(t, 0.9-0.01*float64(c.K)-0.0015, c.FinalAccuracy.Mean, 1e-12)
		assert.Equal(t, 2, c.Reached)
	}
	for _, c := range res.Throughput.Cells {
		assert.Equal(t, 3, c.Steps)
		assert.Positive(t, c.StepsPerSecond)
		assert.Positive(t, c.Speedup)
		assert.Equal(t, int64(3*4*2), c.TrainedSamples)
		assert.LessOrEqual(t, c.MaxStaleness, c.K)
		if c.Policy == rl.Pace {
			assert.Zero(t, c.WastedSamples, "pace never wastes a rollout")
		}
	}

	for _, name := range []string{"learning.md", "learning.json", "throughput.md", "throughput.json",
		"accuracy_vs_k.svg", "accuracy_vs_k.png", "throughput_vs_k.svg", "throughput_vs_k.png"} {
		path := filepath.Join(out, name)
		assert.Contains(t, res.Files, path)
		b, err := os.ReadFile(path)
		require.NoError(t, err, name)
		require.NotEmpty(t, b, name)
		switch filepath.Ext(name) {
		case ".png":
			assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")), name)
		case ".svg":
			assert.Contains(t, string(b), "<svg", name)
		case ".md":
			assert.Equal(t, 1+4, strings.Count(string(b), "\n| "), name) // the header and 4 rows
		}
	}
	var lt LearningTable
	b, err := os.ReadFile(filepath.Join(out, "learning.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &lt))
	assert.Equal(t, *res.Learning, lt)

	// The combined result is what -json prints: one line, both tables.
	line, err := json.Marshal(res)
	require.NoError(t, err)
	assert.NotContains(t, string(line), "\n")
	var back map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(line, &back))
	assert.Contains(t, back, "learning")
	assert.Contains(t, back, "throughput")

	// -replot redraws the same tables from the JSON files.
	again := t.TempDir()
	paths, err := replot(out, again)
	require.NoError(t, err)
	assert.Len(t, paths, 6)
	for _, name := range []string{"learning.md", "throughput.md"} {
		want, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(again, name))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), name)
	}
	_, err = replot(t.TempDir(), again)
	require.ErrorContains(t, err, "neither learning.json nor throughput.json")

	// The learning runs' folders are removed unless asked to keep them.
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), "runs-"), e.Name())
	}
	assert.NotEmpty(t, lines)
}

func TestRunRejectsUnknownOnly(t *testing.T) {
	t.Parallel()
	opts := tinyOptions(t.TempDir())
	opts.Only = "both"
	_, err := run(context.Background(), opts, fakeTrain(t, opts.Learning), nil)
	require.ErrorContains(t, err, "allowed: learning, throughput")
}

// One real learning run on the embedded engine, as small as it gets.
func TestLearningOnEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded engine")
	}
	s := tinyOptions("").Learning
	s.Ks, s.Objectives, s.Seeds = []int{1}, []algo.Objective{algo.Decoupled}, []int64{1}
	s.Steps, s.EvalEvery = 2, 0
	tab, err := runLearning(context.Background(), s, t.TempDir(), runTrain, nil)
	require.NoError(t, err)
	require.Len(t, tab.Cells, 1)
	c := tab.Cells[0]
	assert.Equal(t, 1, c.FinalAccuracy.N)
	assert.Positive(t, c.SamplesPerSecond.Mean)
	assert.LessOrEqual(t, c.MaxStalenessSeen, 1)
	assert.InDelta(t, 0.5, c.BaseAccuracy.Mean, 0.5) // a fraction of 5 problems
}

// A replica runs at most its slots at once, and a call that waited for a
// slot still samples the version served when it was made. The first call's
// latency draw holds its slot until the test releases it, so what overlaps
// is decided by the test, not by timers.
func TestReplicaSlotsAndPinnedVersion(t *testing.T) {
	t.Parallel()
	holding, release := make(chan struct{}), make(chan struct{})
	var draws atomic.Int32
	hold := sim.Latency(func() time.Duration {
		if draws.Add(1) == 1 { // drawn with the slot taken
			close(holding)
			<-release
		}
		return 0
	})
	r := newReplica(1, 3, hold, 7)
	ctx := context.Background()
	prompt := rl.Tokens([]int{1, 2})
	type result struct {
		out rl.SampleOutput
		err error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() {
		out, err := r.Sample(ctx, prompt, 2, rl.SamplingParams{})
		first <- result{out, err}
	}()
	<-holding // the first call holds the only slot
	go func() {
		out, err := r.Sample(ctx, prompt, 1, rl.SamplingParams{MaxTokens: 2})
		second <- result{out, err}
	}()
	for r.calls.Load() < 2 { // the second call is made, at version 0
		runtime.Gosched()
	}
	require.NoError(t, r.Load(ctx, policy.Ref{Version: 5}))
	select {
	case <-second:
		t.Fatal("the second call sampled while the first held the only slot")
	default:
	}
	close(release)
	a, b := <-first, <-second
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	assert.Equal(t, policy.Version(0), a.out.Version)
	assert.Equal(t, policy.Version(0), b.out.Version, "the version is the one served when the call was made")
	require.Len(t, a.out.Sequences, 2)
	require.Len(t, b.out.Sequences, 1)
	assert.Len(t, b.out.Sequences[0].Tokens, 2) // MaxTokens caps the 3 tokens
	for _, seq := range a.out.Sequences {
		require.Len(t, seq.Tokens, 3)
		for j, tok := range seq.Tokens {
			assert.Equal(t, sim.LogProb(0, tok, prompt.Len()+j), seq.Logprobs[j])
		}
	}
	out, err := r.Sample(ctx, prompt, 1, rl.SamplingParams{})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(5), out.Version)

	// A call whose context has ended does not sample (an hour's latency:
	// only the context can end the call).
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = newReplica(1, 3, sim.Fixed(time.Hour), 7).Sample(cctx, prompt, 1, rl.SamplingParams{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = r.Sample(ctx, prompt, 0, rl.SamplingParams{})
	require.ErrorContains(t, err, "n=0")
}

// -replot reads files a person may have edited: whatever they hold, the
// tables either fail to decode or render as Markdown and SVG plots without
// panicking. (PNG rendering is left to TestRunWritesEverything: it is too
// slow for the fuzzer.)
func FuzzTables(f *testing.F) {
	f.Add([]byte(`{"settings":{"ks":[0,2],"seeds":[1,2],"steps":3,"target_accuracy":0.5},"cells":[{"k":0,"objective":"naive","final_accuracy":{"mean":0.5,"std":0.1,"n":2},"runs":[{},{}]},{"k":2,"objective":"naive","final_accuracy":{"mean":0.4,"n":1},"runs":[{}]}]}`),
		[]byte(`{"settings":{"ks":[0,1],"steps":3,"tolerance":0.05},"ideal":{"sync_run_seconds":1,"async_run_seconds":0.5},"cells":[{"policy":"pace","k":0,"steps_per_second":3},{"policy":"pace","k":1,"steps_per_second":6}]}`))
	f.Add([]byte(`{"cells":[]}`), []byte(`{}`))
	f.Add([]byte(`{"cells":[{"objective":"ppo","k":-3,"final_accuracy":{"mean":1e300}}]}`), []byte(`{"cells":[{"k":1,"steps_per_second":-1e300}],"ideal":{"sync_run_seconds":-1}}`))
	f.Add([]byte(`not json`), []byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, learning, throughput []byte) {
		var lt LearningTable
		if json.Unmarshal(learning, &lt) == nil {
			_ = lt.Markdown()
			if p, err := accuracyPlot(lt); err == nil {
				renderSVG(t, p)
			}
		}
		var tt ThroughputTable
		if json.Unmarshal(throughput, &tt) == nil {
			tt.score()
			_ = tt.Markdown()
			if p, err := throughputPlot(tt); err == nil {
				renderSVG(t, p)
			}
		}
	})
}

func renderSVG(t *testing.T, p *plot.Plot) {
	w, err := p.WriterTo(6*vg.Inch, 4*vg.Inch, "svg")
	require.NoError(t, err)
	_, _ = w.WriteTo(io.Discard) // an error (a degenerate axis) is fine; a panic is not
}
