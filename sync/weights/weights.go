// Package weights moves published policy versions from the learner to the
// samplers: Publish saves the trainer's adapter for sampling and records it
// in the registry; a Syncer watches the registry, has every sampler load the
// newest version, and acknowledges the version they all serve. Synchronous
// RL waits for that acknowledgement (WaitServed) before sampling resumes.
//
// Every wait takes a context and has a watchdog that logs what it is
// waiting for: an adapter that never reaches the sampler shows up in the
// log, not as a silent hang or a mysterious staleness.
package weights

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/sourcegraph/conc/pool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sync/watchdog"
)

var tracer trace.Tracer = otel.Tracer("github.com/tandemrl/tandem/sync/weights")

// Publish saves the trainer's current adapter for samplers under name and
// records the ref in reg. It returns the published ref.
func Publish(ctx context.Context, t rl.Trainer, reg *policy.Registry, name string) (policy.Ref, error) {
	return PublishSaved(ctx, t.SaveForSampler(ctx, name), reg, name)
}

// PublishSaved waits for a SaveForSampler call already submitted (a
// learner pipelines it behind its optimizer step, saving a round trip) and
// records the ref in reg.
func PublishSaved(ctx context.Context, saved *rl.Future[policy.Ref], reg *policy.Registry, name string) (policy.Ref, error) {
	ctx, span := tracer.Start(ctx, "publish")
	defer span.End()
	ref, err := saved.Wait(ctx)
	if err != nil {
		return ref, fmt.Errorf("weights: save for sampler %q: %w", name, err)
	}
	span.SetAttributes(attribute.Int64("version", int64(ref.Version)))
	if err := reg.Publish(ref); err != nil {
		return ref, fmt.Errorf("weights: %w", err)
	}
	return ref, nil
}

// Loader is the part of a sampler the Syncer needs.
type Loader interface {
	Load(ctx context.Context, ref policy.Ref) error
}

// Syncer has its samplers serve the newest published version. Create it
// with its fields set, then call Run in a goroutine; Served and WaitServed
// are safe for concurrent use.
type Syncer struct {
	Registry *policy.Registry
	Samplers []Loader
	// OnServed, if set, is called (from Run's goroutine) each time every
	// sampler serves a new version.
	OnServed func(policy.Version)
	// Watchdog is the period of "still waiting" log lines (0 =
	// rl.DefaultWatchdog).
	Watchdog time.Duration
	// Logger receives the watchdog's lines (nil = slog.Default()).
	Logger *slog.Logger
	// LoadRetries bounds retries of a transient load error (0 = 5).
	LoadRetries int

	mu        sync.Mutex
	served    policy.Version
	hasServed bool
	changed   chan struct{}
}

func (s *Syncer) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Syncer) period() time.Duration {
	if s.Watchdog > 0 {
		return s.Watchdog
	}
	return rl.DefaultWatchdog
}

// Run loads each newest published version into every sampler until ctx
// ends (it then returns nil) or a load fails for good (the error, naming
// the lowest-numbered sampler that failed). Versions published while a load
// runs are skipped in favour of the newest. The samplers load concurrently,
// one goroutine each, all ended before the next version or Run's return; a
// panic in a Loader is raised again on Run's goroutine with its stack.
func (s *Syncer) Run(ctx context.Context) error {
	if s.Registry == nil || len(s.Samplers) == 0 {
		return fmt.Errorf("weights: Syncer needs a Registry and at least one sampler")
	}
	want := policy.Version(-1 << 62)
	for {
		ref, err := s.Registry.WaitFor(ctx, want)
		if err != nil {
			return nil // ctx ended
		}
		if err := s.load(ctx, ref); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		want = ref.Version + 1
	}
}

func (s *Syncer) load(ctx context.Context, ref policy.Ref) error {
	ctx, span := tracer.Start(ctx, "weights.load", trace.WithAttributes(attribute.Int64("version", int64(ref.Version))))
	defer span.End()
	dog := watchdog.Start(s.period(), func(w time.Duration) {
		s.logger().Warn("weights: samplers still loading", "version", ref.Version, "uri", ref.URI, "waited", w.Round(time.Millisecond))
	})
	defer dog.Stop()
	// One goroutine per sampler, all waited for. Every load runs to its end
	// even after another has failed, so no sampler is left with a load cut
	// short; the lowest-numbered sampler's error is the one reported. A
	// panic in a Loader is raised again here, with its stack, once every
	// load has returned.
	errs := make([]error, len(s.Samplers))
	p := pool.New().WithMaxGoroutines(len(s.Samplers))
	for i, l := range s.Samplers {
		p.Go(func() { errs[i] = s.loadOne(ctx, l, ref) })
	}
	p.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("weights: sampler %d: load version %d (%s): %w", i, ref.Version, ref.URI, err)
		}
	}
	s.mu.Lock()
	s.served, s.hasServed = ref.Version, true
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.mu.Unlock()
	if s.OnServed != nil {
		s.OnServed(ref.Version)
	}
	return nil
}

func (s *Syncer) loadOne(ctx context.Context, l Loader, ref policy.Ref) error {
	err := l.Load(ctx, ref)
	if err == nil || !rl.IsTransient(err) {
		return err
	}
	retries := s.LoadRetries
	if retries <= 0 {
		retries = 5
	}
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval = 50 * time.Millisecond
	eb.MaxElapsedTime = 0
	b := backoff.WithContext(backoff.WithMaxRetries(eb, uint64(retries)), ctx)
	return backoff.Retry(func() error {
		e := l.Load(ctx, ref)
		if e != nil && !rl.IsTransient(e) {
			return backoff.Permanent(e)
		}
		return e
	}, b)
}

// Served returns the version every sampler serves, and false before the
// first load completes.
func (s *Syncer) Served() (policy.Version, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served, s.hasServed
}

// WaitServed blocks until every sampler serves version v or newer, or ctx
// ends. While it waits, the watchdog logs what it waits for.
func (s *Syncer) WaitServed(ctx context.Context, v policy.Version) error {
	var dog *watchdog.Dog
	defer func() {
		if dog != nil {
			dog.Stop()
		}
	}()
	for {
		s.mu.Lock()
		if s.hasServed && s.served >= v {
			s.mu.Unlock()
			return nil
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		if dog == nil {
			dog = watchdog.Start(s.period(), func(w time.Duration) {
				served, ok := s.Served()
				latest, _ := s.Registry.Latest()
				s.logger().Warn("weights: waiting for samplers to serve version", "want", v, "served", served, "any_served", ok,
					"latest_published", latest.Version, "waited", w.Round(time.Millisecond))
			})
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("weights: wait for samplers to serve version %d: %w", v, context.Cause(ctx))
		}
	}
}
