package ui

import (
	"slices"
	"strconv"
)

// metric is one per-step value of a metrics line, with the field the live
// script reads it from.
type metric struct {
	name, field string
	get         func(*step) float64
}

var (
	mReward    = metric{"reward", "reward_mean", func(s *step) float64 { return s.Reward }}
	mSamples   = metric{"samples/s", "samples_per_s", func(s *step) float64 { return s.SamplesPerSec }}
	mTokens    = metric{"tokens/s", "tokens_per_s", func(s *step) float64 { return s.TokensPerSec }}
	mGap       = metric{"log-prob gap", "logprob_gap", func(s *step) float64 { return s.LogprobGap }}
	mDropped   = metric{"dropped", "dropped", func(s *step) float64 { return float64(s.Dropped) }}
	mRequeued  = metric{"requeued", "requeued", func(s *step) float64 { return float64(s.Requeued) }}
	mFiltered  = metric{"filtered", "filtered", func(s *step) float64 { return float64(s.Filtered) }}
	mVersion   = metric{"trained version", "version", func(s *step) float64 { return float64(s.Version) }}
	mServed    = metric{"served version", "served_version", func(s *step) float64 { return float64(s.ServedVersion) }}
	mMeanStale = metric{"mean staleness", "mean_staleness", func(s *step) float64 { return s.meanStaleness() }}
	mMaxStale  = metric{"max staleness", "max_staleness", func(s *step) float64 { return float64(s.MaxStaleness) }}
)

// stepSeries is metric m over steps, downsampled to MaxPoints.
func stepSeries(name string, steps []step, m metric) Series {
	xs, ys := make([]float64, len(steps)), make([]float64, len(steps))
	for i := range steps {
		xs[i], ys[i] = float64(steps[i].Step), m.get(&steps[i])
	}
	xs, ys = downsample(xs, ys, MaxPoints)
	return Series{Name: name, Field: m.field, X: xs, Y: ys}
}

// evalSeries is the held-out accuracy per evaluation.
func evalSeries(name string, evals []evalPoint) Series {
	xs, ys := make([]float64, len(evals)), make([]float64, len(evals))
	for i, e := range evals {
		xs[i], ys[i] = float64(e.Step), e.Accuracy
	}
	xs, ys = downsample(xs, ys, MaxPoints)
	return Series{Name: name, Field: "accuracy", X: xs, Y: ys}
}

// stalenessSeries is one series per staleness value seen: the groups of
// that staleness in each step's batch.
func stalenessSeries(steps []step) []Series {
	seen := map[int]bool{}
	for i := range steps {
		for k, n := range steps[i].Staleness {
			if n > 0 {
				seen[k] = true
			}
		}
	}
	keys := make([]int, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Series, 0, len(keys))
	for _, k := range keys {
		m := metric{"staleness " + strconv.Itoa(k), "staleness." + strconv.Itoa(k),
			func(s *step) float64 { return float64(s.Staleness[k]) }}
		out = append(out, stepSeries(m.name, steps, m))
	}
	return out
}

// runCharts are the charts of one run's page.
func runCharts(st []step, evals []evalPoint) []Chart {
	series := func(ms ...metric) []Series {
		out := make([]Series, len(ms))
		for i, m := range ms {
			out[i] = stepSeries(m.name, st, m)
		}
		return out
	}
	return []Chart{
		{ID: "reward", Title: "Mean reward per step", XLabel: "step", Series: series(mReward)},
		{ID: "accuracy", Title: "Held-out accuracy per evaluation", XLabel: "step", Series: []Series{evalSeries("accuracy", evals)}},
		{ID: "staleness", Title: "Staleness histogram over time (groups per batch)", XLabel: "step", Series: stalenessSeries(st), Area: true},
		{ID: "stale-trained", Title: "Staleness of trained groups", XLabel: "step", Series: series(mMeanStale, mMaxStale)},
		{ID: "versions", Title: "Versions: trained vs served", XLabel: "step", Series: series(mVersion, mServed)},
		{ID: "samples", Title: "Samples per second", XLabel: "step", Series: series(mSamples)},
		{ID: "tokens", Title: "Tokens per second", XLabel: "step", Series: series(mTokens)},
		{ID: "gap", Title: "Sampler vs trainer log-prob gap", XLabel: "step", Series: series(mGap)},
		{ID: "counts", Title: "Dropped, requeued and filtered", XLabel: "step", Series: series(mDropped, mRequeued, mFiltered)},
	}
}

// compareCharts overlay the runs on shared axes, one series per run.
func compareCharts(runs []*runData) []Chart {
	per := func(id, title string, m metric) Chart {
		c := Chart{ID: id, Title: title, XLabel: "step"}
		for _, d := range runs {
			c.Series = append(c.Series, stepSeries(d.Name, d.metrics.steps, m))
		}
		return c
	}
	acc := Chart{ID: "accuracy", Title: "Held-out accuracy per evaluation", XLabel: "step"}
	for _, d := range runs {
		acc.Series = append(acc.Series, evalSeries(d.Name, d.evals))
	}
	return []Chart{
		per("reward", "Mean reward per step", mReward),
		acc,
		per("stale-trained", "Mean staleness of trained groups", mMeanStale),
		per("samples", "Samples per second", mSamples),
		per("gap", "Sampler vs trainer log-prob gap", mGap),
	}
}
