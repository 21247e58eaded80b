package resilient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sync/serial"
	"github.com/tandemrl/tandem/wire"
)

// Recoverable reports whether err means the server lost the client's
// state (it restarted: the session, model or future is unknown) or cannot
// be reached, so that reopening and retrying may succeed. Errors a server
// answered about the call itself are not recoverable.
func Recoverable(err error) bool {
	var (
		ce *tinker.ConnError
		se *tinker.StatusError
	)
	switch {
	case err == nil:
		return false
	case errors.As(err, &ce), errors.Is(err, tinker.ErrFutureExpired):
		return true
	case errors.As(err, &se):
		return se.Status == http.StatusNotFound || se.Retryable()
	}
	return false
}

// Options configure a resilient Trainer or Sampler.
type Options struct {
	// Client is how to open a session (a new one after each failure).
	Client tinker.Options
	// Base and Lora describe the model a Trainer creates.
	Base string
	Lora wire.LoraConfig
	// RecoverFor bounds how long one recovery keeps trying to reach a
	// server; default 2 minutes.
	RecoverFor time.Duration
	// SaveEvery is how many optimizer steps a Trainer applies between the
	// states it saves on its own (save_weights "auto-<version>"); a
	// recovery replays at most this many steps. Default 1.
	SaveEvery int
	// Logger receives a line per recovery (nil = slog.Default()).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.SaveEvery <= 0 {
		o.SaveEvery = 1
	}
	if o.RecoverFor == 0 {
		o.RecoverFor = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Trainer is an rl.Trainer over a Tinker-compatible server that survives
// the server being restarted. Calls return at once and run one at a time,
// in submission order, on the goroutine of a serial.Queue the Trainer
// owns. Every Options.SaveEvery applied optimizer steps it saves the
// training state (save_weights, "auto-<version>"); when a call fails
// because the server lost the model (no answer, or a 404 while get_info no
// longer knows the model), it opens a new session, creates a new model,
// loads the last saved state with its optimizer, replays the
// forward_backward and optim_step calls made since that save, and retries
// the call. The replay is exact: the same data on the same weights and
// optimizer state gives the same update. Safe for concurrent use.
//
// A call whose ctx ends before its turn is skipped (and not journaled);
// once it has started, it runs to the end whatever happens to its ctx, so
// that the journal always knows whether the server applied it.
type Trainer struct {
	opts  Options
	q     serial.Queue
	close sync.Once

	recoveries atomic.Int64
	saves      atomic.Int64

	// Touched only by queued calls (one at a time), and by Close once the
	// queue has drained.
	client  *tinker.Client
	tr      *tinker.Trainer // nil after a failed recovery
	last    *policy.Ref     // last state saved or loaded
	journal []replay        // state-changing calls since last
	steps   int             // optimizer steps in journal
}

var _ rl.Trainer = (*Trainer)(nil)

// replay is a journaled call: it does the call again on a new model.
type replay func(ctx context.Context, tr *tinker.Trainer) error

// retryPause is the wait between two attempts of one recovery.
const retryPause = 200 * time.Millisecond

// NewTrainer opens a session, creates the model and starts the Trainer.
func NewTrainer(ctx context.Context, opts Options) (*Trainer, error) {
	t := &Trainer{opts: opts.withDefaults()}
	if err := t.dial(ctx); err != nil {
		return nil, fmt.Errorf("resilient: new trainer: %w", err)
	}
	return t, nil
}

// Recoveries returns how many times the Trainer recreated its model.
func (t *Trainer) Recoveries() int { return int(t.recoveries.Load()) }

// ModelID returns the server's id of the current model, after the calls
// submitted before it; "" once the Trainer is closed or while it has no
// model (its last recovery failed).
func (t *Trainer) ModelID() string {
	id, _ := serial.Submit(&t.q, context.Background(), func(context.Context) (string, error) {
		if t.tr == nil {
			return "", nil
		}
		return t.tr.ModelID(), nil
	}).Wait(context.Background())
	return id
}

// Close lets the calls already submitted finish, then closes the session;
// later calls fail with serial.ErrClosed.
func (t *Trainer) Close() error {
	t.q.Close()
	t.close.Do(func() {
		if t.client != nil {
			t.client.Close()
		}
	})
	return nil
}

func (t *Trainer) dial(ctx context.Context) error {
	c, err := tinker.New(ctx, t.opts.Client)
	if err != nil {
		return err
	}
	tr, err := c.NewTrainer(ctx, t.opts.Base, t.opts.Lora)
	if err != nil {
		c.Close()
		return err
	}
	t.client, t.tr = c, tr
	return nil
}

// call queues a call: do runs it on the current model, with recovery;
// after, if set, keeps the journal and the last saved state up to date
// once it has succeeded.
func call[T any](t *Trainer, ctx context.Context, kind string,
	do func(ctx context.Context, tr *tinker.Trainer) *rl.Future[T], after func(ctx context.Context, v T, again replay)) *rl.Future[T] {
	return serial.Submit(&t.q, ctx, func(ctx context.Context) (T, error) {
		ctx = context.WithoutCancel(ctx)
		run := func(ctx context.Context, tr *tinker.Trainer) (T, error) { return do(ctx, tr).Wait(ctx) }
		v, err := withRecovery(t, ctx, kind, run)
		if err == nil && after != nil {
			after(ctx, v, func(ctx context.Context, tr *tinker.Trainer) error {
				_, err := run(ctx, tr)
				return err
			})
		}
		return v, err
	})
}

// withRecovery runs do on the current model, recovering the model as often
// as needed.
func withRecovery[T any](t *Trainer, ctx context.Context, kind string, do func(ctx context.Context, tr *tinker.Trainer) (T, error)) (T, error) {
	var zero T
	if t.tr == nil {
		if err := t.recover(ctx); err != nil {
			return zero, fmt.Errorf("resilient: %s: no model since a failed recovery, and recovering failed again: %w", kind, err)
		}
	}
	for {
		v, err := do(ctx, t.tr)
		if !Recoverable(err) {
			return v, err
		}
		// A 404 for a model the server still knows is about the call itself
		// (e.g. an unknown checkpoint): recreating the model would not help.
		if isNotFound(err) && known(ctx, t.opts.Client, "get_info", map[string]string{"model_id": t.tr.ModelID(), "type": "get_info"}) {
			return v, err
		}
		t.opts.Logger.Info("resilient: trainer lost its model; recovering", "call", kind, "err", err)
		if rerr := t.recover(ctx); rerr != nil {
			return zero, fmt.Errorf("%w (recovery failed: %v)", err, rerr)
		}
	}
}

// journaled records a forward_backward to replay after a recovery.
func (t *Trainer) journaled(_ context.Context, _ rl.ForwardBackwardOutput, again replay) {
	t.journal = append(t.journal, again)
}

// stepped journals an optimizer step and saves the state every SaveEvery
// steps. A failed auto-save is logged, not returned: the step did apply.
func (t *Trainer) stepped(ctx context.Context, out rl.OptimStepOutput, again replay) {
	t.journal = append(t.journal, again)
	if t.steps++; t.steps < t.opts.SaveEvery {
		return
	}
	name := fmt.Sprintf("auto-%d", out.Version)
	ref, err := withRecovery(t, ctx, "save_state", func(ctx context.Context, tr *tinker.Trainer) (policy.Ref, error) {
		return tr.SaveState(ctx, name).Wait(ctx)
	})
	if err != nil {
		t.opts.Logger.Warn("resilient: auto save failed", "name", name, "err", err)
		return
	}
	t.saved(ref)
}

func (t *Trainer) saved(ref policy.Ref) {
	t.last, t.journal, t.steps = &ref, nil, 0
	t.saves.Add(1)
}

// recover replaces the client and model, restores the last saved state and
// replays the journal, retrying until RecoverFor has passed.
func (t *Trainer) recover(ctx context.Context) error {
	t.recoveries.Add(1)
	t.drop()
	deadline := time.Now().Add(t.opts.RecoverFor)
	for attempt := 1; ; attempt++ {
		err := t.restore(ctx)
		if err == nil {
			t.opts.Logger.Info("resilient: trainer recovered", "model", t.tr.ModelID(), "from", refURI(t.last), "replayed", len(t.journal), "attempts", attempt)
			return nil
		}
		t.drop()
		if !Recoverable(err) || time.Now().After(deadline) {
			return fmt.Errorf("restore (attempt %d): %w", attempt, err)
		}
		select {
		case <-time.After(retryPause):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// drop closes the current session, if any.
func (t *Trainer) drop() {
	if t.client != nil {
		t.client.Close()
	}
	t.client, t.tr = nil, nil
}

func (t *Trainer) restore(ctx context.Context) error {
	if err := t.dial(ctx); err != nil {
		return err
	}
	if t.last != nil {
		if _, err := t.tr.LoadState(ctx, *t.last, true).Wait(ctx); err != nil {
			return fmt.Errorf("load %s: %w", t.last.URI, err)
		}
	}
	for i, again := range t.journal {
		if err := again(ctx, t.tr); err != nil {
			return fmt.Errorf("replay call %d of %d: %w", i+1, len(t.journal), err)
		}
	}
	return nil
}

func refURI(r *policy.Ref) string {
	if r == nil {
		return "(fresh adapter)"
	}
	return r.URI
}

// ForwardBackward implements rl.Trainer.
func (t *Trainer) ForwardBackward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return call(t, ctx, "forward_backward", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[rl.ForwardBackwardOutput] {
		return tr.ForwardBackward(ctx, data, loss)
	}, t.journaled)
}

// Forward implements rl.Trainer.
func (t *Trainer) Forward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return call(t, ctx, "forward", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[rl.ForwardBackwardOutput] {
		return tr.Forward(ctx, data, loss)
	}, nil)
}

// OptimStep implements rl.Trainer. When the step is due an auto-save, its
// Future resolves after the save (which no later call could overtake).
func (t *Trainer) OptimStep(ctx context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	return call(t, ctx, "optim_step", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[rl.OptimStepOutput] {
		return tr.OptimStep(ctx, p)
	}, t.stepped)
}

// SaveForSampler implements rl.Trainer.
func (t *Trainer) SaveForSampler(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return call(t, ctx, "save_weights_for_sampler", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[policy.Ref] {
		return tr.SaveForSampler(ctx, name)
	}, nil)
}

// SaveState implements rl.Trainer; after it, recoveries restore the saved
// state.
func (t *Trainer) SaveState(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return call(t, ctx, "save_state", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[policy.Ref] {
		return tr.SaveState(ctx, name)
	}, func(_ context.Context, ref policy.Ref, _ replay) { t.saved(ref) })
}

// LoadState implements rl.Trainer; after it, recoveries restore ref.
func (t *Trainer) LoadState(ctx context.Context, ref policy.Ref, withOptimizer bool) *rl.Future[struct{}] {
	return call(t, ctx, "load_state", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[struct{}] {
		return tr.LoadState(ctx, ref, withOptimizer)
	}, func(context.Context, struct{}, replay) { t.saved(ref) })
}
