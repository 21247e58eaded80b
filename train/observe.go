package train

import (
	"sort"
	"sync"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/progress"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/runlog"
)

// totals are the running figures of a run that its summary reports. The
// zero value is empty; add folds in one step. Not safe for concurrent use.
type totals struct {
	staleSum  float64
	staleN    int
	gapSum    float64
	gapN      int
	maxStale  int
	dropped   int64
	requeued  int64
	samples   int
	lastMeanR float64
}

// add folds in step m.
func (t *totals) add(m loop.StepMetrics) {
	for s, n := range m.Staleness {
		t.staleSum += float64(s * n)
		t.staleN += n
	}
	if m.LogprobGapValid {
		t.gapSum += m.LogprobGap
		t.gapN++
	}
	t.maxStale = max(t.maxStale, m.MaxStaleness)
	t.dropped, t.requeued = m.Dropped, m.Requeued
	t.samples += m.Samples
	t.lastMeanR = m.MeanReward
}

// meanStaleness is the mean staleness over every group trained on (0
// before any).
func (t *totals) meanStaleness() float64 {
	if t.staleN == 0 {
		return 0
	}
	return t.staleSum / float64(t.staleN)
}

// fill writes the totals into sum.
func (t *totals) fill(sum *Summary) {
	sum.MaxStalenessSeen = t.maxStale
	sum.Dropped, sum.Requeued = t.dropped, t.requeued
	sum.Samples = t.samples
	sum.FinalReward = t.lastMeanR
	sum.MeanStaleness = t.meanStaleness()
	if t.gapN > 0 {
		sum.MeanLogprobGap = t.gapSum / float64(t.gapN)
	}
}

// record is step m as a line of metrics.jsonl, secs into training.
func record(m loop.StepMetrics, secs float64) runlog.Record {
	rec := runlog.Record{
		Step: m.Step, Version: int64(m.Version), Seconds: secs, RewardMean: m.MeanReward,
		Loss: m.Metrics["loss:sum"], Staleness: map[int]int{}, MaxStaleness: m.MaxStaleness,
		Dropped: int(m.Dropped), Requeued: int(m.Requeued), Samples: m.Samples, Tokens: m.Tokens,
		ServedVersion: int64(m.Served), Extra: map[string]float64{},
	}
	if m.LogprobGapValid {
		rec.LogprobGap = m.LogprobGap
	}
	if t := m.Total.Seconds(); t > 0 {
		rec.TokensPerSec, rec.SamplesPerSec = float64(m.Tokens)/t, float64(m.Samples)/t
	}
	for s, n := range m.Staleness {
		if n > 0 {
			rec.Staleness[s] = n
		}
	}
	for k, v := range m.Metrics {
		rec.Extra[k] = v
	}
	rec.Extra["time:wait_s"] = m.Wait.Seconds()
	rec.Extra["time:train_s"] = m.Train.Seconds()
	rec.Extra["time:publish_s"] = m.Publish.Seconds()
	return rec
}

// observer is a job's loop observer: it logs each step to the run log,
// reports progress through the hooks, keeps the totals, and marks the
// versions to evaluate after the run (every cfg.EvalEvery steps and the
// last). The loop calls observe from one goroutine; fill and snapshots may
// be called from another.
type observer struct {
	steps     int // the run's step count
	evalEvery int
	rlog      *runlog.Run
	hooks     Hooks
	start     time.Time // training began

	mu        sync.Mutex
	totals    totals
	snapshots map[policy.Version]EvalPoint
}

func newObserver(cfg Config, rlog *runlog.Run, hooks Hooks) *observer {
	return &observer{steps: cfg.RL.Steps, evalEvery: cfg.EvalEvery, rlog: rlog, hooks: hooks, start: time.Now(),
		snapshots: map[policy.Version]EvalPoint{}}
}

// observe is the loop's Observer.
func (o *observer) observe(m loop.StepMetrics) {
	secs := time.Since(o.start).Seconds()
	rec := record(m, secs)
	done := m.Step + 1
	o.mu.Lock()
	o.totals.add(m)
	if (o.evalEvery > 0 && done%o.evalEvery == 0) || done == o.steps {
		o.snapshots[m.Version] = EvalPoint{Step: done, Version: m.Version, Seconds: secs}
	}
	meanStale := o.totals.meanStaleness()
	o.mu.Unlock()
	if err := o.rlog.Log(rec); err != nil {
		o.hooks.logf("metrics: %v", err)
	}
	if o.hooks.Progress != nil {
		o.hooks.Progress(progress.Status{Step: done, Total: o.steps, Reward: m.MeanReward, MaxStaleness: m.MaxStaleness,
			MeanStale: meanStale, TokensPerSec: rec.TokensPerSec, Dropped: int(m.Dropped)})
	}
	if m.Checkpoint != nil {
		o.hooks.logf("step %d: saved %s", done, m.Checkpoint.URI)
	}
}

// fill writes the totals so far into sum.
func (o *observer) fill(sum *Summary) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.totals.fill(sum)
}

// snapshotList returns the marked versions, oldest first.
func (o *observer) snapshotList() []EvalPoint {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]EvalPoint, 0, len(o.snapshots))
	for _, pt := range o.snapshots {
		out = append(out, pt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}
