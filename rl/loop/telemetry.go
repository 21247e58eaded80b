package loop

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

const scope = "github.com/tandemrl/tandem/rl/loop"

// telemetry holds the loop's OpenTelemetry instruments. Library code uses
// the global providers (no-ops unless the program installs an SDK).
type telemetry struct {
	tracer    trace.Tracer
	reward    metric.Float64Histogram
	staleness metric.Int64Histogram
	samples   metric.Int64Counter
	steps     metric.Int64Counter
	gap       metric.Float64Histogram
	stepTime  metric.Float64Histogram
}

func newTelemetry() *telemetry {
	m := otel.Meter(scope)
	t := &telemetry{tracer: otel.Tracer(scope)}
	// Instrument creation only fails on invalid names; ours are fixed.
	t.reward, _ = m.Float64Histogram("tandem.reward.mean", metric.WithDescription("mean trajectory return per learner step"))
	t.staleness, _ = m.Int64Histogram("tandem.staleness", metric.WithDescription("staleness of each trained group, in versions"))
	t.samples, _ = m.Int64Counter("tandem.samples", metric.WithDescription("trajectories trained on"))
	t.steps, _ = m.Int64Counter("tandem.steps", metric.WithDescription("learner steps"))
	t.gap, _ = m.Float64Histogram("tandem.logprob_gap", metric.WithDescription("mean |sampler − trainer| log-prob per step"))
	t.stepTime, _ = m.Float64Histogram("tandem.step.duration", metric.WithUnit("s"), metric.WithDescription("learner step wall time"))
	return t
}

func (t *telemetry) record(ctx context.Context, m *StepMetrics) {
	t.steps.Add(ctx, 1)
	t.samples.Add(ctx, int64(m.Samples))
	t.reward.Record(ctx, m.MeanReward)
	for s, n := range m.Staleness {
		for range n {
			t.staleness.Record(ctx, int64(s))
		}
	}
	if m.LogprobGapValid {
		t.gap.Record(ctx, m.LogprobGap)
	}
	t.stepTime.Record(ctx, m.Total.Seconds())
}
