package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/sourcegraph/conc/pool"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// Sink is where workers get admission and deliver groups: the replay
// buffer (buffer.Buffer satisfies it).
type Sink interface {
	// Admit blocks until a rollout may start and returns the version the
	// sampler serves.
	Admit(ctx context.Context) (policy.Version, error)
	// Put delivers a group; on error the group is not accepted and its
	// admission is released.
	Put(ctx context.Context, g rl.Group) error
	// Fail releases the admission of a rollout that produced no group.
	Fail(admitted policy.Version)
}

// PutAdmitter is an optional extension of Sink: PutAdmit delivers g and
// then waits for the next admission in one call, which a Sink can do under
// one lock acquisition instead of two (buffer.Buffer does). accepted
// reports whether g was delivered; if not, err is Put's, else Admit's.
type PutAdmitter interface {
	PutAdmit(ctx context.Context, g rl.Group) (next policy.Version, accepted bool, err error)
}

// Refiller is an optional extension of Sink for datasets that get problems
// back (requeue): a worker that finds the dataset empty waits in
// AwaitRefill, instead of stopping, while a problem may still come back.
// Refills counts the problems handed back so far; a worker reads it before
// it asks the dataset, and AwaitRefill(ctx, seen) returns true once the
// count has moved past seen (ask again) and false once nothing can come
// back any more. buffer.Buffer implements it.
type Refiller interface {
	Refills() uint64
	AwaitRefill(ctx context.Context, seen uint64) (bool, error)
}

// Tracker hears what becomes of the problems the workers take from the
// dataset: Taken for each, then Failed (with the rollout's error) or
// Abandoned (cut short by shutdown, or refused by the Sink as the run
// ended) for those whose group was not delivered. Delivered groups are
// followed by the Sink. It is called from the worker goroutines with the
// problem's Key, and must be cheap and never block. ledger.Ledger
// implements it.
type Tracker interface {
	Taken(key string)
	Failed(key string, err error)
	Abandoned(key string)
}

// ErrTooManyFailures stops the workers after FailureLimit rollouts in a row
// failed.
var ErrTooManyFailures = errors.New("rollout: too many rollouts failed in a row")

// Workers is the bounded pool of rollout goroutines. Each worker repeats:
// admission from the Sink, a problem from the Dataset, a rollout by the
// Runner, delivery to the Sink.
type Workers struct {
	// N is the number of worker goroutines (≥ 1).
	N       int
	Runner  *Runner
	Dataset Dataset
	Sink    Sink
	// FailureLimit stops the pool with ErrTooManyFailures after this many
	// consecutive failed rollouts (0 = rl.DefaultFailureLimit).
	FailureLimit int
	// Track, if set, hears of every problem taken and of those not
	// delivered (see Tracker).
	Track Tracker
	// OnFailure, if set, sees every failed rollout's error (from the
	// worker's goroutine; it must not block).
	OnFailure func(error)

	failures atomic.Int64
	failed   atomic.Int64
	dropped  atomic.Int64
}

// Failed returns the number of rollouts that failed.
func (w *Workers) Failed() int64 { return w.failed.Load() }

// Abandoned returns the number of problems taken from the dataset whose
// rollout was cut short by cancellation (or whose group the Sink refused
// because ctx ended): neither failed nor delivered.
func (w *Workers) Abandoned() int64 { return w.dropped.Load() }

// Run starts the workers and returns when all have stopped: when the
// dataset is exhausted (nil; with a Refiller Sink, once nothing can come
// back to it either), the Sink stops admitting (nil), ctx ends
// (nil: the caller knows why), or the failure limit is reached
// (ErrTooManyFailures, and the other workers are cancelled). Every
// goroutine it starts has ended when it returns.
func (w *Workers) Run(ctx context.Context) error {
	if w.N < 1 {
		return fmt.Errorf("rollout: Workers.N is %d; must be ≥ 1", w.N)
	}
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(w.N)
	for range w.N {
		p.Go(w.work)
	}
	return p.Wait()
}

func (w *Workers) work(ctx context.Context) error {
	// A context of its own: a worker parked in the Sink selects on its own
	// Done channel, not on one channel locked by every parked worker.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	limit := int64(w.FailureLimit)
	if limit <= 0 {
		limit = rl.DefaultFailureLimit
	}
	pa, _ := w.Sink.(PutAdmitter)
	rf, _ := w.Sink.(Refiller)
	admitted, admitErr := w.Sink.Admit(ctx)
	for admitErr == nil { // else closed or cancelled: a clean stop
		var seen uint64
		if rf != nil {
			seen = rf.Refills()
		}
		prob, err := w.Dataset.Next(ctx)
		if err != nil {
			w.Sink.Fail(admitted)
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("rollout: dataset: %w", err)
			}
			if rf == nil {
				return nil
			}
			// The dataset is empty, but with requeue a problem may come back.
			if more, err := rf.AwaitRefill(ctx, seen); err != nil || !more {
				return nil
			}
			admitted, admitErr = w.Sink.Admit(ctx)
			continue
		}
		if w.Track != nil {
			w.Track.Taken(prob.Key())
		}
		g, err := w.Runner.Rollout(ctx, prob)
		if err != nil {
			w.Sink.Fail(admitted)
			var pe *PanicError
			if ctx.Err() != nil && !errors.As(err, &pe) {
				// Cut short by the run's end. (A panic in user code is a
				// failure of its own, whenever it happens.)
				w.abandon(prob)
				return nil
			}
			w.failed.Add(1)
			if w.Track != nil {
				w.Track.Failed(prob.Key(), err)
			}
			if w.OnFailure != nil {
				w.OnFailure(err)
			}
			if w.failures.Add(1) >= limit {
				return fmt.Errorf("%w (%d): last: %w", ErrTooManyFailures, limit, err)
			}
			admitted, admitErr = w.Sink.Admit(ctx)
			continue
		}
		if w.failures.Load() != 0 {
			w.failures.Store(0)
		}
		g.Admitted, g.Source = admitted, prob
		if pa != nil {
			var accepted bool
			admitted, accepted, admitErr = pa.PutAdmit(ctx, g)
			if !accepted {
				w.abandon(prob)
				return nil
			}
			continue
		}
		if err := w.Sink.Put(ctx, g); err != nil {
			w.abandon(prob)
			return nil
		}
		admitted, admitErr = w.Sink.Admit(ctx)
	}
	return nil
}

// abandon counts a problem taken whose rollout was cut short, or whose
// group the Sink refused, as the run ended.
func (w *Workers) abandon(p Problem) {
	w.dropped.Add(1)
	if w.Track != nil {
		w.Track.Abandoned(p.Key())
	}
}
