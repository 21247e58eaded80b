package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/tandemrl/tandem/buffer"
	"github.com/tandemrl/tandem/ledger"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/rollout"
	"github.com/tandemrl/tandem/sync/weights"
)

// Deps are the parts a Loop drives. Trainer, at least one Sampler and
// Dataset are required.
type Deps struct {
	Trainer rl.Trainer
	// Samplers serve rollouts round-robin; every one loads each published
	// version, and a version counts as served when all have loaded it.
	Samplers []rl.Sampler
	Dataset  rollout.Dataset
	// Algorithm turns groups into batches (nil = algo.New(algo.Config{},
	// nil): GRPO with the naive objective, uniform groups filtered).
	Algorithm rl.Algorithm
	// Registry records published versions (nil = a new one).
	Registry *policy.Registry
	// Observer receives each step's metrics from its own goroutine; a slow
	// observer never blocks the loop (metrics beyond a queue of 1024 are
	// dropped and counted in the Report).
	Observer func(StepMetrics)
	// Decode turns tokens into text for reward functions (nil = no text).
	Decode func([]int) string
	// Logger receives watchdog warnings and rollout failures (nil =
	// slog.Default()).
	Logger *slog.Logger
	// StartStep numbers the first step (a resumed run passes the step it
	// stopped at). The starting version is the trainer's own (restore it
	// with Trainer.LoadState before Run); the data position is the
	// dataset's (see rollout.NewSliceDataset).
	StartStep int
	// Ledger, if set, records what became of every prompt handed out:
	// each hand-out trained (step, version, staleness), dropped, requeued,
	// failed (by error kind), abandoned, left over or unconfirmed (see
	// package ledger). It costs one short lock per event; nil records
	// nothing.
	Ledger *ledger.Ledger
	// LedgerObserver, if set, receives every change of Ledger (which it
	// requires) from its own goroutine, each prompt's changes in the order
	// they happened (changes of different prompts may interleave in another
	// order than the ledger's first-hand-out order): a slow observer never
	// blocks the loop (changes beyond a queue of 65,536 are dropped and
	// counted in the Report). Run watches Ledger while it runs.
	LedgerObserver func(ledger.Change)
	// Rollouts, if set, is called on the learner's goroutine with every
	// step's trained groups once the trainer has confirmed the step, with
	// the step's number and the version it trained from (a group's
	// staleness is Group.Staleness(version)). It must not keep groups or
	// their slices (they are recycled when it returns) and should be quick:
	// the next step waits for it.
	Rollouts func(step int, version policy.Version, groups []rl.Group)
}

// Report is what a run did, returned by Loop.Report after Run.
type Report struct {
	// Steps is the number of learner steps completed in this run.
	Steps int
	// Start and Version are the trainer's version at the start and end.
	Start, Version policy.Version
	// Buffer counts every group: accepted, trained, dropped, requeued,
	// drained.
	Buffer buffer.Stats
	// Rollout counts samples, retries and recovered panics.
	Rollout rollout.Stats
	// Failed counts rollouts that produced no group; Abandoned those cut
	// short by shutdown.
	Failed, Abandoned int64
	// PeakInFlight is the largest number of rollouts admitted and not yet
	// finished at once.
	PeakInFlight int64
	// Leftover holds the groups accepted but never taken by the learner
	// when the run ended (Buffer.Drained counts them). Nothing accepted is
	// lost: Buffer.Accepted = Trained + Dropped + Requeued + Drained.
	// Unconfirmed lists the groups of a step the trainer did not confirm
	// (an error, or the shutdown grace ran out); they are counted in
	// Buffer.Trained, since the learner took them, and their memory is not
	// recycled.
	Leftover, Unconfirmed []rl.Group
	// Ledger summarises Deps.Ledger at the end of the run (nil without
	// one).
	Ledger *ledger.Summary
	// ObserverDropped counts metrics the observer was too slow to take;
	// LedgerObserverDropped the ledger changes its observer missed.
	ObserverDropped, LedgerObserverDropped int64
	Elapsed                                time.Duration
}

// Loop is one configured run. Create it with New and start it with Run.
type Loop struct {
	cfg  rl.Config
	deps Deps
	tel  *telemetry

	mu     sync.Mutex
	report Report
	ran    bool
}

// New checks cfg and deps and returns a loop ready to Run. An invalid
// config fails here with an error naming the field and the allowed values.
func New(cfg rl.Config, deps Deps) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	switch {
	case deps.Trainer == nil:
		return nil, errors.New("loop: Deps.Trainer is nil")
	case len(deps.Samplers) == 0:
		return nil, errors.New("loop: Deps.Samplers is empty; need at least one sampler")
	case deps.Dataset == nil:
		return nil, errors.New("loop: Deps.Dataset is nil")
	case deps.LedgerObserver != nil && deps.Ledger == nil:
		return nil, errors.New("loop: Deps.LedgerObserver needs a Deps.Ledger to observe")
	}
	for i, s := range deps.Samplers {
		if s == nil {
			return nil, fmt.Errorf("loop: Deps.Samplers[%d] is nil", i)
		}
	}
	if deps.Algorithm == nil {
		g, err := algo.New(algo.Config{}, nil)
		if err != nil {
			return nil, fmt.Errorf("loop: default algorithm: %w", err)
		}
		deps.Algorithm = g
	}
	if deps.Registry == nil {
		deps.Registry = &policy.Registry{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	return &Loop{cfg: cfg, deps: deps, tel: newTelemetry()}, nil
}

// Config returns the configuration with defaults applied.
func (l *Loop) Config() rl.Config { return l.cfg }

// Registry returns the registry of published versions.
func (l *Loop) Registry() *policy.Registry { return l.deps.Registry }

// Report returns what the last Run did.
func (l *Loop) Report() Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.report
}

// errLearnerDone stops the other goroutines once the learner has returned.
var errLearnerDone = errors.New("loop: learner stopped")

// Run publishes the trainer's current version, starts the weight sync, the
// rollout workers and the observer, and runs the learner until Config.Steps
// steps are done (nil), the dataset is exhausted and no full batch remains
// (nil; with requeue, once nothing can come back to the dataset and the
// groups left have been trained as a last, short batch), ctx ends (context.Cause(ctx)), or a part fails (its error). Every
// goroutine it starts has ended when it returns. A Loop runs once.
func (l *Loop) Run(ctx context.Context) (err error) {
	l.mu.Lock()
	if l.ran {
		l.mu.Unlock()
		return errors.New("loop: Run called twice")
	}
	l.ran = true
	l.mu.Unlock()
	began := time.Now()
	cfg, deps := l.cfg, l.deps

	// Publish the starting version so the samplers serve it.
	start, err := l.publishStart(ctx)
	if err != nil {
		return err
	}
	led := deps.Ledger
	var onStale func(rl.Group)
	if cfg.StalePolicy == rl.Requeue || led != nil {
		onStale = func(g rl.Group) {
			p, ok := g.Source.(rollout.Problem)
			if !ok {
				return
			}
			if cfg.StalePolicy != rl.Requeue {
				led.Dropped(p.Key())
				return
			}
			if led != nil {
				led.Requeued(p.Key())
			}
			deps.Dataset.Requeue(p)
		}
	}
	buf, err := buffer.New(buffer.FromConfig(cfg, start), onStale)
	if err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	loaders := make([]weights.Loader, len(deps.Samplers))
	for i, s := range deps.Samplers {
		loaders[i] = s
	}
	syncer := &weights.Syncer{Registry: deps.Registry, Samplers: loaders, OnServed: buf.Serve,
		Watchdog: cfg.Watchdog, Logger: deps.Logger}
	runner := &rollout.Runner{Samplers: deps.Samplers, Params: cfg.Sampling, GroupSize: cfg.GroupSize,
		MaxTurns: cfg.MaxTurns, Decode: deps.Decode}
	workers := &rollout.Workers{N: cfg.Workers, Runner: runner, Dataset: deps.Dataset, Sink: buf,
		FailureLimit: cfg.FailureLimit, OnFailure: func(err error) {
			deps.Logger.Debug("loop: rollout failed", "err", err)
		}}
	if led != nil {
		if d, ok := deps.Dataset.(interface{ Len() int }); ok {
			// A dataset of known size: the ledger need not grow its
			// tables as it goes. A run of few steps hands out at most
			// a few batches more than it trains.
			n := d.Len()
			if cfg.Steps > 0 {
				n = min(n, (cfg.Steps+cfg.MaxStaleness+2)*cfg.GroupsPerBatch)
			}
			led.Reserve(n)
		}
		workers.Track = led
	}

	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	workCtx, stopWork := context.WithCancelCause(runCtx)
	defer stopWork(nil)
	var ledObs *observerQueue[ledger.Change]
	var ledWG conc.WaitGroup
	if led != nil && deps.LedgerObserver != nil {
		ledObs = newObserverQueue(deps.LedgerObserver, 1<<16)
		led.Watch(ledObs.push)
		ledWG.Go(func() { ledObs.run(context.WithoutCancel(ctx)) })
	}
	var obs *observerQueue[StepMetrics]
	if deps.Observer != nil {
		obs = newObserverQueue(deps.Observer, 1024)
	}

	var wg conc.WaitGroup
	wg.Go(func() {
		if err := syncer.Run(workCtx); err != nil {
			stopRun(err)
		}
	})
	wg.Go(func() {
		if err := workers.Run(workCtx); err != nil {
			stopRun(err)
		}
		buf.Close() // no more rollouts: the learner stops once no batch can be filled
	})
	if obs != nil {
		wg.Go(func() { obs.run(context.WithoutCancel(ctx)) })
	}

	ln := &learner{l: l, buf: buf, syncer: syncer, runner: runner, workers: workers, obs: obs, start: start, version: start}
	lerr := ln.run(runCtx)

	// Shut down: stop admissions and rollouts, wait for every goroutine.
	stopWork(errLearnerDone)
	buf.Close()
	if obs != nil {
		obs.close()
	}
	wg.Wait()

	rep := Report{Steps: ln.steps, Start: start, Version: ln.version, Rollout: runner.Stats(),
		Failed: workers.Failed(), Abandoned: workers.Abandoned(),
		Leftover: buf.Drain(), Unconfirmed: ln.unconfirmed, Elapsed: time.Since(began)}
	rep.Buffer = buf.Stats()
	rep.PeakInFlight = rep.Buffer.Peak
	if led != nil {
		forPrompts(rep.Leftover, led.LeftOver)
		forPrompts(rep.Unconfirmed, led.Unconfirmed)
		sum := led.Summary()
		rep.Ledger = &sum
	}
	if ledObs != nil {
		led.Watch(nil)
		ledObs.close()
		ledWG.Wait()
		rep.LedgerObserverDropped = ledObs.dropped.Load()
	}
	if obs != nil {
		rep.ObserverDropped = obs.dropped.Load()
	}
	l.mu.Lock()
	l.report = rep
	l.mu.Unlock()

	completed := cfg.Steps > 0 && ln.steps >= cfg.Steps
	switch {
	case completed && lerr == nil:
		return nil
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case runCtx.Err() != nil && !errors.Is(context.Cause(runCtx), errLearnerDone):
		return context.Cause(runCtx) // a worker or the weight sync failed
	}
	return lerr
}

// forPrompts calls f with the prompt key of each group.
func forPrompts(gs []rl.Group, f func(key string)) {
	for i := range gs {
		if p, ok := gs[i].Source.(rollout.Problem); ok {
			f(p.Key())
		}
	}
}

// publishStart publishes the trainer's current version (unless the
// registry already holds it) and returns it.
func (l *Loop) publishStart(ctx context.Context) (policy.Version, error) {
	ref, err := l.deps.Trainer.SaveForSampler(ctx, fmt.Sprintf("%s-start", l.cfg.Run)).Wait(ctx)
	if err != nil {
		return 0, fmt.Errorf("loop: publish starting version: %w", err)
	}
	if latest, ok := l.deps.Registry.Latest(); ok && latest.Version >= ref.Version {
		if latest.Version > ref.Version {
			return 0, fmt.Errorf("loop: registry already holds version %d, newer than the trainer's %d", latest.Version, ref.Version)
		}
		return ref.Version, nil
	}
	if err := l.deps.Registry.Publish(ref); err != nil {
		return 0, fmt.Errorf("loop: %w", err)
	}
	return ref.Version, nil
}
