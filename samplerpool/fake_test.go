package samplerpool

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a replica the test controls. With gate set, each Sample first
// announces itself on entered, then waits for its error (nil = success)
// on gate. While down, every call fails with a transient error.
type fake struct {
	mu      sync.Mutex
	version policy.Version
	down    bool
	loadErr error
	gate    chan error
	loads   []policy.Version
	calls   int

	entered chan struct{}
	// healthEntered, when set, makes Health announce itself and block
	// until its context ends.
	healthEntered chan struct{}
}

var errDown = fmt.Errorf("fake: replica down: %w", rl.ErrTransient)

func newFake() *fake { return &fake{entered: make(chan struct{})} }

func (f *fake) Sample(ctx context.Context, _ rl.ModelInput, n int, _ rl.SamplingParams) (rl.SampleOutput, error) {
	f.mu.Lock()
	f.calls++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case f.entered <- struct{}{}:
		case <-ctx.Done():
			return rl.SampleOutput{}, ctx.Err()
		}
		select {
		case err := <-gate:
			if err != nil {
				return rl.SampleOutput{}, err
			}
		case <-ctx.Done():
			return rl.SampleOutput{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return rl.SampleOutput{}, errDown
	}
	return rl.SampleOutput{Sequences: make([]rl.Sequence, n), Version: f.version}, nil
}

func (f *fake) Load(_ context.Context, ref policy.Ref) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errDown
	}
	if f.loadErr != nil {
		return f.loadErr
	}
	f.version = ref.Version
	f.loads = append(f.loads, ref.Version)
	return nil
}

func (f *fake) Health(ctx context.Context) error {
	f.mu.Lock()
	down, entered := f.down, f.healthEntered
	f.mu.Unlock()
	if entered != nil {
		select {
		case entered <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-ctx.Done()
		return ctx.Err()
	}
	if down {
		return errDown
	}
	return nil
}

func (f *fake) set(fn func(f *fake)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fake) loaded() []policy.Version {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]policy.Version(nil), f.loads...)
}

// noHealth hides fake's Health method, so the pool probes with Sample.
type noHealth struct{ *fake }

func (noHealth) Health() {} // shadows fake.Health with a method of another signature

// fakeClock is a Clock the test advances.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{t, ch})
	return ch
}

// Advance moves the clock on by d and fires the timers now due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// events collects a pool's events; wait reads them until one matches.
type events chan Event

func (e events) on(ev Event) { e <- ev } // the buffer is far larger than any test's events

func (e events) wait(t *testing.T, kind EventKind, replica string) Event {
	t.Helper()
	for ev := range e {
		if ev.Kind == kind && ev.Replica == replica {
			return ev
		}
	}
	panic("unreachable")
}

// testPool builds a pool over fakes named a, b, … with a fake clock, a
// one-second back-off and an event log.
func testPool(t *testing.T, cfg Config, samplers ...rl.Sampler) (*Pool, *fakeClock, events) {
	t.Helper()
	clk := newFakeClock()
	ev := make(events, 1024)
	cfg.Clock, cfg.Backoff, cfg.OnEvent = clk, constBackoff, ev.on
	reps := make([]Replica, len(samplers))
	for i, s := range samplers {
		reps[i] = Replica{Name: string(rune('a' + i)), Sampler: s}
	}
	p, err := New(reps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, clk, ev
}
