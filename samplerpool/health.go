package samplerpool

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// Run is the health loop: it probes ejected replicas and re-loads stale
// ones on their back-off schedules until ctx is done, then waits for the
// probes in flight (they get ctx, so they are cut off) and returns ctx's
// cause. One Run at a time: a second returns ErrRunning.
func (p *Pool) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	return p.run(ctx)
}

// run is Run once p.running is held; it releases it on return.
func (p *Pool) run(ctx context.Context) error {
	defer p.running.Store(false)
	var wg sync.WaitGroup
	defer wg.Wait()
	jobs := make([]job, 0, len(p.reps))
	for ctx.Err() == nil {
		p.mu.Lock()
		jobs, next, ok := p.core.dueWork(p.cfg.Clock.Now(), jobs[:0])
		p.mu.Unlock()
		// At most one job per replica is in flight: the goroutines are
		// bounded by the number of replicas.
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.runJob(ctx, j)
			}()
		}
		var timer <-chan time.Time
		if ok {
			timer = p.cfg.Clock.At(next)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-p.wake:
		case <-timer:
		}
	}
	return context.Cause(ctx)
}

// Start runs the health loop in a goroutine the pool owns, until ctx is
// done or Close is called.
func (p *Pool) Start(ctx context.Context) error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.stop != nil || !p.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	ctx, cancel := context.WithCancelCause(ctx)
	p.stop, p.done = cancel, make(chan struct{})
	done := p.done
	go func() {
		defer close(done)
		_ = p.run(ctx)
	}()
	return nil
}

// Close stops the goroutine Start launched (cancelling its probes with
// ErrClosed) and waits for it. The pool still routes afterwards, but no
// longer re-admits. Close without Start, or twice, does nothing.
func (p *Pool) Close() error {
	p.lifeMu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.lifeMu.Unlock()
	if stop == nil {
		return nil
	}
	stop(ErrClosed)
	<-done
	return nil
}

// Reloader is a replica that can register a version again although it
// believes it serves it already, for a server that restarted and lost its
// adapters (backend/openai.Sampler). Re-admission uses Reload when the
// replica has it, Load otherwise.
type Reloader interface {
	Reload(ctx context.Context, ref policy.Ref) error
}

// runJob does one probe or re-load and records its end.
func (p *Pool) runJob(ctx context.Context, j job) {
	rep := p.reps[j.i]
	jctx, cancel := context.WithTimeout(ctx, p.cfg.HealthTimeout)
	var err error
	loaded := false
	if j.kind == jobProbe {
		err = p.check(jctx, rep)
		if err != nil {
			err = fmt.Errorf("probe: %w", err)
		}
	}
	if err == nil && j.hasRef {
		load := rep.Sampler.Load
		if r, ok := rep.Sampler.(Reloader); ok && j.kind == jobProbe {
			load = r.Reload // it may have restarted and lost the version it believes it serves
		}
		if err = load(jctx, j.ref); err != nil {
			err = fmt.Errorf("re-load version %d: %w", j.ref.Version, err)
		}
		loaded = err == nil
	}
	cancel()
	if ctx.Err() != nil {
		p.mu.Lock()
		p.core.abandon(j)
		p.mu.Unlock()
		return
	}
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	var readmitted bool
	if j.kind == jobProbe {
		readmitted = p.core.probed(j, loaded, err, now)
	} else {
		p.core.reloaded(j, err, now)
	}
	p.notifyLocked()
	p.mu.Unlock()
	switch {
	case readmitted:
		p.emit(Event{Kind: EventReadmitted, Replica: rep.Name, Version: j.ref.Version})
	case err != nil && j.kind == jobProbe:
		p.emit(Event{Kind: EventProbeFailed, Replica: rep.Name, Err: err})
	case err != nil:
		p.emit(Event{Kind: EventLoadFailed, Replica: rep.Name, Version: j.ref.Version, Err: err})
	default:
		p.emit(Event{Kind: EventLoaded, Replica: rep.Name, Version: j.ref.Version})
	}
	p.nudge()
}

// check is the probe: the replica's Health method, or a one-token Sample.
func (p *Pool) check(ctx context.Context, rep Replica) error {
	if h, ok := rep.Sampler.(HealthChecker); ok {
		return h.Health(ctx)
	}
	_, err := rep.Sampler.Sample(ctx, p.cfg.ProbePrompt, 1, rl.SamplingParams{MaxTokens: 1})
	return err
}
