package loop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tandemrl/tandem/buffer"
	"github.com/tandemrl/tandem/ledger"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
	"github.com/tandemrl/tandem/sync/watchdog"
	"github.com/tandemrl/tandem/sync/weights"
)

// learner is the goroutine that takes batches, trains and publishes. Its
// fields are touched only by that goroutine until Run reads them after it
// returns.
type learner struct {
	l       *Loop
	buf     *buffer.Buffer
	syncer  *weights.Syncer
	runner  *rollout.Runner
	workers *rollout.Workers
	obs     *observerQueue[StepMetrics]

	start, version policy.Version
	steps          int
	unconfirmed    []rl.Group
	groups         []rl.Group // reused batch slice
}

type positioner interface{ Position() (epoch, pos int) }

func (ln *learner) run(ctx context.Context) error {
	// Steps already in flight finish under a grace period after ctx ends,
	// so that what the trainer received is confirmed, not lost.
	grace, cancelGrace := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelGrace(nil)
	stopGrace := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(ln.l.cfg.ShutdownGrace, func() {
			cancelGrace(fmt.Errorf("loop: shutdown grace %v ran out: %w", ln.l.cfg.ShutdownGrace, context.Cause(ctx)))
		})
		context.AfterFunc(grace, func() { t.Stop() })
	})
	defer stopGrace()

	cfg := ln.l.cfg
	for cfg.Steps == 0 || ln.steps < cfg.Steps {
		if err := ln.step(ctx, grace); err != nil {
			if errors.Is(err, buffer.ErrClosed) {
				return nil // the data ran out
			}
			return err
		}
	}
	return nil
}

func (ln *learner) step(ctx, grace context.Context) error {
	l := ln.l
	cfg := l.cfg
	stepNo := l.deps.StartStep + ln.steps
	t0 := time.Now()
	if ctx.Err() != nil {
		return context.Cause(ctx) // no new step once the run is stopping
	}

	// 1. Wait for a batch that satisfies the staleness rule.
	dog := watchdog.Start(cfg.Watchdog, func(w time.Duration) {
		st := ln.buf.Stats()
		served, _ := ln.syncer.Served()
		l.deps.Logger.Warn("loop: learner waiting for a batch", "step", stepNo, "version", ln.version,
			"need_groups", cfg.GroupsPerBatch, "buffered", st.Held, "running", st.Running, "served", served,
			"waited", w.Round(time.Millisecond))
	})
	groups, err := ln.buf.Take(ctx, ln.version, ln.groups[:0])
	dog.Stop()
	if err != nil {
		return err
	}
	ln.groups = groups
	tTaken := time.Now()

	ctxStep, span := l.tel.tracer.Start(grace, "learner.step", trace.WithAttributes(
		attribute.Int("step", stepNo), attribute.Int64("version", int64(ln.version))))
	defer span.End()
	name := fmt.Sprintf("%s-step-%06d", cfg.Run, stepNo+1)
	v0 := ln.version
	m, saved, err := ln.train(ctxStep, groups, name)
	if err != nil {
		ln.unconfirmed = append(ln.unconfirmed, groups...)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return err
	}
	ln.steps++ // the trainer confirmed the step
	tTrained := time.Now()
	if led := l.deps.Ledger; led != nil {
		for i := range groups {
			if p, ok := groups[i].Source.(rollout.Problem); ok {
				led.Trained(p.Key(), ledger.Training{Step: stepNo, Version: groups[i].Version, Staleness: groups[i].Staleness(v0)})
			}
		}
	}
	if f := l.deps.Rollouts; f != nil {
		f(stepNo, v0, groups)
	}
	for i := range groups {
		ln.runner.Recycle(&groups[i]) // the step's futures have resolved
	}
	clear(groups)

	// 2. Publish (the save was submitted behind the optimizer step); with
	// k = 0 wait until the samplers serve it.
	if _, err := weights.PublishSaved(ctxStep, saved, l.deps.Registry, name); err != nil {
		return fmt.Errorf("loop: step %d: %w", stepNo, err)
	}
	if cfg.SaveEvery > 0 && (stepNo+1)%cfg.SaveEvery == 0 {
		ref, err := l.deps.Trainer.SaveState(ctxStep, name).Wait(ctxStep)
		if err != nil {
			return fmt.Errorf("loop: step %d: save state: %w", stepNo, err)
		}
		m.Checkpoint = &ref
	}
	if cfg.MaxStaleness == 0 {
		if err := ln.syncer.WaitServed(ctx, ln.version); err != nil {
			return err
		}
	}
	tDone := time.Now()

	m.Step, m.Version = stepNo, ln.version
	m.Served, _ = ln.syncer.Served()
	st := ln.buf.Stats()
	m.Dropped, m.Requeued, m.Failed = st.Dropped, st.Requeued, ln.workers.Failed()
	m.Panics = ln.runner.Stats().Panics
	m.InFlight, m.Buffered = st.Running, int(st.Held)
	m.DataEpoch, m.DataPos = -1, -1
	if p, ok := l.deps.Dataset.(positioner); ok {
		m.DataEpoch, m.DataPos = p.Position()
	}
	m.Wait, m.Train, m.Publish, m.Total = tTaken.Sub(t0), tTrained.Sub(tTaken), tDone.Sub(tTrained), tDone.Sub(t0)
	l.tel.record(ctxStep, &m)
	span.SetAttributes(attribute.Float64("mean_reward", m.MeanReward), attribute.Int("max_staleness", m.MaxStaleness))
	ln.obs.push(m)
	return nil
}

// train runs the batch's optimizer sub-steps and returns the metrics it
// can fill, and the SaveForSampler call it submitted right behind the last
// optimizer step (so publishing costs no extra round trip).
func (ln *learner) train(ctx context.Context, groups []rl.Group, name string) (StepMetrics, *rl.Future[policy.Ref], error) {
	l := ln.l
	cfg := l.cfg
	var m StepMetrics
	m.Groups = len(groups)
	var rewardSum float64
	for i := range groups {
		g := &groups[i]
		s := int(g.Staleness(ln.version))
		if s < 0 {
			s = 0 // a sampler ahead of the learner cannot happen; be safe
		}
		for len(m.Staleness) <= s {
			m.Staleness = append(m.Staleness, 0)
		}
		m.Staleness[s]++
		m.MaxStaleness = max(m.MaxStaleness, s)
		for j := range g.Trajectories {
			rewardSum += g.Trajectories[j].Return()
			m.Tokens += g.Trajectories[j].Tokens()
		}
		m.Samples += len(g.Trajectories)
	}
	if m.Samples > 0 {
		m.MeanReward = rewardSum / float64(m.Samples)
	}

	if p, ok := l.deps.Algorithm.(rl.Preparer); ok {
		if err := p.Prepare(ctx, l.deps.Trainer, ln.version, groups); err != nil {
			return m, nil, fmt.Errorf("loop: algorithm: prepare: %w", err)
		}
	}
	// A batch is GroupsPerBatch groups, which Substeps divides; only the
	// last batch of a run whose data ran out (requeue) may be short, and it
	// is split as evenly as its groups allow.
	subs := min(cfg.Substeps, len(groups))
	var saved *rl.Future[policy.Ref]
	var gapSum float64
	var gapN int
	var byReplica map[string]*gapAcc
	for sub := range subs {
		part := groups[sub*len(groups)/subs : (sub+1)*len(groups)/subs]
		batch, err := l.deps.Algorithm.Batch(ctx, l.deps.Trainer, ln.version, part)
		if err != nil {
			return m, nil, fmt.Errorf("loop: algorithm: %w", err)
		}
		fb := l.deps.Trainer.ForwardBackward(ctx, batch.Datums, batch.Loss)
		op := l.deps.Trainer.OptimStep(ctx, cfg.Adam)
		if sub == subs-1 {
			saved = l.deps.Trainer.SaveForSampler(ctx, name)
		}
		v := ln.version
		dog := watchdog.Start(cfg.Watchdog, func(w time.Duration) {
			l.deps.Logger.Warn("loop: waiting for the trainer", "version", v, "datums", len(batch.Datums),
				"forward_backward_done", isDone(fb.Done()), "optim_step_done", isDone(op.Done()), "waited", w.Round(time.Millisecond))
		})
		fbOut, err := fb.Wait(ctx)
		if err != nil {
			dog.Stop()
			return m, nil, fmt.Errorf("loop: forward-backward at version %d: %w", ln.version, err)
		}
		opOut, err := op.Wait(ctx)
		dog.Stop()
		if err != nil {
			return m, nil, fmt.Errorf("loop: optimizer step at version %d: %w", ln.version, err)
		}
		if opOut.Version != ln.version+1 {
			return m, nil, fmt.Errorf("loop: trainer reports version %d after an optimizer step from %d; is another learner using it?", opOut.Version, ln.version)
		}
		ln.version = opOut.Version
		s, n := logprobGap(batch, fbOut, &byReplica)
		if len(batch.Actions) == 0 {
			s, n = batch.GapSum, batch.GapTokens
		}
		gapSum += s
		gapN += n
		if m.Metrics == nil {
			m.Metrics = make(map[string]float64, len(fbOut.Metrics)+len(batch.Metrics))
		}
		for k, v := range fbOut.Metrics {
			m.Metrics[k] += v
		}
		for k, v := range batch.Metrics {
			m.Metrics[k] += v / float64(subs)
		}
		if om, ok := l.deps.Algorithm.(rl.OutputMetrics); ok {
			extra, err := om.OutputMetrics(fbOut)
			if err != nil {
				return m, nil, fmt.Errorf("loop: algorithm: output metrics: %w", err)
			}
			for k, v := range extra {
				m.Metrics[k] += v / float64(subs)
			}
		}
	}
	if gapN > 0 {
		m.LogprobGap, m.LogprobGapValid = gapSum/float64(gapN), true
	} else {
		m.LogprobGap = math.NaN()
	}
	for name, a := range byReplica {
		if a.n == 0 {
			continue
		}
		if m.ReplicaLogprobGap == nil {
			m.ReplicaLogprobGap = make(map[string]float64, len(byReplica))
		}
		m.ReplicaLogprobGap[name] = a.sum / float64(a.n)
	}
	return m, saved, nil
}

// gapAcc accumulates one replica's log-prob gap.
type gapAcc struct {
	sum float64
	n   int
}

// logprobGap sums |q − p| over the batch's action positions, q being the
// sampler's log-prob (the datum's "logprobs" input) and p the trainer's
// (the forward-backward's "logprobs" output). Actions tagged with a
// sampler replica (rl.Span.Replica) are also summed per replica into
// *byReplica, made on first use.
func logprobGap(b rl.Batch, out rl.ForwardBackwardOutput, byReplica *map[string]*gapAcc) (sum float64, n int) {
	if len(out.LossFnOutputs) != len(b.Datums) {
		return 0, 0
	}
	for _, sp := range b.Actions {
		q := b.Datums[sp.Datum].LossFnInputs[rl.InputLogprobs].Floats
		p := out.LossFnOutputs[sp.Datum][rl.InputLogprobs].Floats
		if sp.End > len(q) || sp.End > len(p) {
			continue
		}
		var s float64
		for i := sp.Start; i < sp.End; i++ {
			s += math.Abs(q[i] - p[i])
		}
		sum += s
		n += sp.End - sp.Start
		if sp.Replica != "" {
			if *byReplica == nil {
				*byReplica = map[string]*gapAcc{}
			}
			a := (*byReplica)[sp.Replica]
			if a == nil {
				a = &gapAcc{}
				(*byReplica)[sp.Replica] = a
			}
			a.sum += s
			a.n += sp.End - sp.Start
		}
	}
	return sum, n
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
