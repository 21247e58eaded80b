package samplerpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc/pool"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// Pool is an rl.Sampler over several replicas (see the package comment for
// the rules). It is safe for concurrent use. Its health loop runs in Run,
// or in the goroutine Start launches and Close stops; without it the pool
// still routes and ejects, but never re-admits.
type Pool struct {
	cfg    Config
	reps   []Replica
	byName map[string]int

	mu    sync.Mutex
	core  *core
	freed chan struct{} // closed when a slot frees up; nil while nobody waits

	wake    chan struct{} // size 1: a pending nudge for the health loop
	running atomic.Bool

	lifeMu sync.Mutex
	stop   context.CancelCauseFunc // set by Start
	done   chan struct{}           // closed when Start's goroutine ends
}

var _ rl.Sampler = (*Pool)(nil)

// New returns a pool over replicas (at least one, with distinct non-empty
// names) under cfg. The pool does not own the replicas: it never closes
// them. It starts no goroutine; see Run and Start.
func New(replicas []Replica, cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(replicas) == 0 {
		return nil, errors.New("samplerpool: no replicas; want at least one")
	}
	cfg = cfg.withDefaults()
	names := make([]string, len(replicas))
	byName := make(map[string]int, len(replicas))
	for i, r := range replicas {
		if r.Name == "" {
			return nil, fmt.Errorf("samplerpool: replica %d has no name", i)
		}
		if r.Sampler == nil {
			return nil, fmt.Errorf("samplerpool: replica %q has no sampler", r.Name)
		}
		if j, dup := byName[r.Name]; dup {
			return nil, fmt.Errorf("samplerpool: replicas %d and %d are both named %q; names must be distinct", j, i, r.Name)
		}
		byName[r.Name] = i
		names[i] = r.Name
	}
	return &Pool{
		cfg:    cfg,
		reps:   append([]Replica(nil), replicas...),
		byName: byName,
		core:   newCore(names, cfg.MaxFailures, cfg.MaxOutstanding, cfg.Backoff),
		wake:   make(chan struct{}, 1),
	}, nil
}

// Sample draws n completions of prompt on one replica, retrying on others
// after transient failures. The output is the replica's, Version included.
// A retried call's result is whatever the replica that answered returns;
// the failed attempts returned nothing. The error after the last retry,
// a non-transient error and a cancellation are returned as they are.
// The output's Replica names the replica that answered, unless the
// replica set it itself (a pool of pools).
func (p *Pool) Sample(ctx context.Context, prompt rl.ModelInput, n int, sp rl.SamplingParams) (rl.SampleOutput, error) {
	out, name, err := p.SampleReplica(ctx, prompt, n, sp)
	if err == nil && out.Replica == "" {
		out.Replica = name
	}
	return out, err
}

// SampleReplica is Sample that also names the replica that answered (or,
// on error, the last one tried; "" when none was), so the caller can
// attribute the log-prob gap with RecordGap.
func (p *Pool) SampleReplica(ctx context.Context, prompt rl.ModelInput, n int, sp rl.SamplingParams) (rl.SampleOutput, string, error) {
	var buf [4]int
	tried := buf[:0]
	var lastErr error
	for {
		i, since, err := p.acquire(ctx, tried)
		if err != nil {
			if lastErr != nil && errors.Is(err, ErrNoReplica) {
				return rl.SampleOutput{}, p.reps[tried[len(tried)-1]].Name, lastErr
			}
			return rl.SampleOutput{}, "", err
		}
		out, err := p.reps[i].Sampler.Sample(ctx, prompt, n, sp)
		kind := p.classify(ctx, err)
		p.mu.Lock()
		ejected := p.core.release(i, since, kind, p.cfg.Clock.Now())
		p.notifyLocked()
		p.mu.Unlock()
		if ejected {
			p.emit(Event{Kind: EventEjected, Replica: p.reps[i].Name, Err: err})
			p.nudge()
		}
		if kind != outcomeTransient || len(tried) >= p.cfg.Retries {
			return out, p.reps[i].Name, err
		}
		tried = append(tried, i)
		lastErr = err
	}
}

func (p *Pool) classify(ctx context.Context, err error) outcome {
	switch {
	case err == nil:
		return outcomeOK
	case ctx.Err() != nil:
		return outcomeCanceled
	case p.cfg.IsTransient(err):
		return outcomeTransient
	}
	return outcomeError
}

// acquire routes one attempt, waiting while every routable replica is at
// MaxOutstanding, and returns the replica and its admission (for
// core.release). On cancellation it leaves the state unchanged.
func (p *Pool) acquire(ctx context.Context, tried []int) (int, int64, error) {
	for {
		p.mu.Lock()
		i, res := p.core.acquire(tried)
		if res == picked {
			since := p.core.admission(i)
			p.mu.Unlock()
			return i, since, nil
		}
		if res == pickNone {
			p.mu.Unlock()
			return -1, 0, ErrNoReplica
		}
		if p.freed == nil {
			p.freed = make(chan struct{})
		}
		ch := p.freed
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return -1, 0, context.Cause(ctx)
		case <-ch:
		}
	}
}

// notifyLocked wakes the callers waiting for a slot. p.mu is held.
func (p *Pool) notifyLocked() {
	if p.freed != nil {
		close(p.freed)
		p.freed = nil
	}
}

// nudge tells the health loop that there is new work; it never blocks.
func (p *Pool) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Pool) emit(e Event) {
	if p.cfg.OnEvent != nil {
		p.cfg.OnEvent(e)
	}
}

// Load has every replica that is not ejected load ref, at most
// Config.LoadConcurrency at a time, and waits for all of them. It returns
// nil once at least one replica serves ref; the others are marked stale and
// re-loaded by the health loop, and ejected replicas load the newest ref
// when re-admitted. When every Load failed it returns their errors joined
// (ErrNoReplica when no replica is routable).
func (p *Pool) Load(ctx context.Context, ref policy.Ref) error {
	p.mu.Lock()
	targets := p.core.setTarget(ref)
	p.mu.Unlock()
	if len(targets) == 0 {
		return ErrNoReplica
	}
	errs := make([]error, len(targets))
	var ok atomic.Bool
	wg := pool.New().WithMaxGoroutines(min(p.cfg.LoadConcurrency, len(targets)))
	for k, i := range targets {
		wg.Go(func() {
			err := p.reps[i].Sampler.Load(ctx, ref)
			p.mu.Lock()
			p.core.loaded(i, ref, err, p.cfg.Clock.Now())
			p.notifyLocked() // a newer version may change who is preferred
			p.mu.Unlock()
			if err != nil {
				errs[k] = fmt.Errorf("replica %q: %w", p.reps[i].Name, err)
				p.emit(Event{Kind: EventLoadFailed, Replica: p.reps[i].Name, Version: ref.Version, Err: err})
				p.nudge()
				return
			}
			ok.Store(true)
			p.emit(Event{Kind: EventLoaded, Replica: p.reps[i].Name, Version: ref.Version})
		})
	}
	wg.Wait()
	if ok.Load() {
		return nil
	}
	return fmt.Errorf("samplerpool: load version %d: %w", ref.Version, errors.Join(errs...))
}
