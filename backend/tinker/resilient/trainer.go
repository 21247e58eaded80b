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
// the server being restarted. Calls run one at a time, in submission order,
// on a goroutine the Trainer owns. Every Options.SaveEvery applied optimizer
// steps it saves the training state (save_weights, "auto-<version>"); when a call
// fails because the server lost the model (no answer, or a 404 while
// get_info no longer knows the model), it opens a new session, creates
// a new model, loads the last saved state with its optimizer, replays the
// forward_backward and optim_step calls made since that save, and retries
// the call. The replay is exact: the same data on the same weights and
// optimizer state gives the same update. Safe for concurrent use.
type Trainer struct {
	opts  Options
	jobs  chan job
	stop  chan struct{}
	done  chan struct{}
	close sync.Once

	recoveries atomic.Int64
	saves      atomic.Int64

	// Owned by the run goroutine.
	client  *tinker.Client
	tr      *tinker.Trainer
	last    *policy.Ref // last state saved or loaded
	journal []job       // state-changing calls since last
	steps   int         // optimizer steps in journal
}

var _ rl.Trainer = (*Trainer)(nil)

// job is one call: do runs it on a tinker trainer and waits for it.
type job struct {
	kind    string
	do      func(ctx context.Context, tr *tinker.Trainer) (any, error)
	resolve func(v any, err error)
}

// NewTrainer opens a session, creates the model and starts the Trainer.
func NewTrainer(ctx context.Context, opts Options) (*Trainer, error) {
	t := &Trainer{opts: opts.withDefaults(), jobs: make(chan job), stop: make(chan struct{}), done: make(chan struct{})}
	if err := t.dial(ctx); err != nil {
		return nil, err
	}
	go t.run()
	return t, nil
}

// Recoveries returns how many times the Trainer recreated its model.
func (t *Trainer) Recoveries() int { return int(t.recoveries.Load()) }

// ModelID returns the server's id of the current model.
func (t *Trainer) ModelID() string {
	r := rl.NewFuture[string]()
	t.submit(context.Background(), job{kind: "model_id", do: func(_ context.Context, tr *tinker.Trainer) (any, error) { return tr.ModelID(), nil },
		resolve: func(v any, err error) { s, _ := v.(string); r.Resolve(s, err) }})
	id, _ := r.Wait(context.Background())
	return id
}

// Close stops the Trainer after the calls already submitted and closes
// its session.
func (t *Trainer) Close() error {
	t.close.Do(func() { close(t.stop) })
	<-t.done
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

func (t *Trainer) run() {
	defer close(t.done)
	defer func() {
		if t.client != nil {
			t.client.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		select {
		case j := <-t.jobs:
			t.handle(ctx, j)
		case <-t.stop:
			return
		}
	}
}

// submit hands j to the run goroutine, or fails it when the Trainer is
// closed or ctx ends first.
func (t *Trainer) submit(ctx context.Context, j job) {
	select {
	case t.jobs <- j:
	case <-t.stop:
		j.resolve(nil, errors.New("e2e: trainer closed"))
	case <-ctx.Done():
		j.resolve(nil, context.Cause(ctx))
	}
}

// handle runs j, recovering the model as often as needed, then keeps the
// journal and the last saved state up to date.
func (t *Trainer) handle(ctx context.Context, j job) {
	v, err := t.withRecovery(ctx, j)
	j.resolve(v, err)
	if err != nil {
		return
	}
	switch j.kind {
	case "forward_backward":
		t.journal = append(t.journal, j)
	case "optim_step":
		t.journal = append(t.journal, j)
		if t.steps++; t.steps < t.opts.SaveEvery {
			return
		}
		name := fmt.Sprintf("auto-%d", v.(rl.OptimStepOutput).Version)
		save := job{kind: "save_state", do: func(ctx context.Context, tr *tinker.Trainer) (any, error) { return tr.SaveState(ctx, name).Wait(ctx) }}
		if ref, err := t.withRecovery(ctx, save); err == nil {
			t.saved(ref.(policy.Ref))
		} else {
			t.opts.Logger.Warn("e2e: auto save failed", "name", name, "err", err)
		}
	case "save_state", "load_state":
		t.saved(v.(policy.Ref))
	}
}

func (t *Trainer) saved(ref policy.Ref) {
	t.last, t.journal, t.steps = &ref, nil, 0
	t.saves.Add(1)
}

func (t *Trainer) withRecovery(ctx context.Context, j job) (any, error) {
	for {
		v, err := j.do(ctx, t.tr)
		if !Recoverable(err) {
			return v, err
		}
		// A 404 for a model the server still knows is about the call itself
		// (e.g. an unknown checkpoint): recreating the model would not help.
		if isNotFound(err) && known(ctx, t.opts.Client, "get_info", map[string]string{"model_id": t.tr.ModelID(), "type": "get_info"}) {
			return v, err
		}
		t.opts.Logger.Info("e2e: trainer lost its model; recovering", "call", j.kind, "err", err)
		if rerr := t.recover(ctx); rerr != nil {
			return nil, fmt.Errorf("%w (recovery failed: %v)", err, rerr)
		}
	}
}

// recover replaces the client and model, restores the last saved state and
// replays the journal, retrying until RecoverFor has passed.
func (t *Trainer) recover(ctx context.Context) error {
	t.recoveries.Add(1)
	t.client.Close()
	t.client, t.tr = nil, nil
	deadline := time.Now().Add(t.opts.RecoverFor)
	for attempt := 0; ; attempt++ {
		err := t.restore(ctx)
		if err == nil {
			t.opts.Logger.Info("e2e: trainer recovered", "model", t.tr.ModelID(), "from", refURI(t.last), "replayed", len(t.journal), "attempts", attempt+1)
			return nil
		}
		if t.client != nil {
			t.client.Close()
			t.client, t.tr = nil, nil
		}
		if !Recoverable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (t *Trainer) restore(ctx context.Context) error {
	if err := t.dial(ctx); err != nil {
		return err
	}
	if t.last != nil {
		if _, err := t.tr.LoadState(ctx, *t.last, true).Wait(ctx); err != nil {
			return err
		}
	}
	for _, j := range t.journal {
		if _, err := j.do(ctx, t.tr); err != nil {
			return err
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

// call queues a typed call.
func call[T any](t *Trainer, ctx context.Context, kind string, do func(ctx context.Context, tr *tinker.Trainer) *rl.Future[T]) *rl.Future[T] {
	f := rl.NewFuture[T]()
	t.submit(ctx, job{
		kind: kind,
		do:   func(ctx context.Context, tr *tinker.Trainer) (any, error) { return do(ctx, tr).Wait(ctx) },
		resolve: func(v any, err error) {
			x, _ := v.(T)
			f.Resolve(x, err)
		},
	})
	return f
}

// ForwardBackward implements rl.Trainer.
func (t *Trainer) ForwardBackward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return call(t, ctx, "forward_backward", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[rl.ForwardBackwardOutput] {
		return tr.ForwardBackward(ctx, data, loss)
	})
}

// Forward implements rl.Trainer.
func (t *Trainer) Forward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return call(t, ctx, "forward", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[rl.ForwardBackwardOutput] {
		return tr.Forward(ctx, data, loss)
	})
}

// OptimStep implements rl.Trainer.
func (t *Trainer) OptimStep(ctx context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	return call(t, ctx, "optim_step", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[rl.OptimStepOutput] {
		return tr.OptimStep(ctx, p)
	})
}

// SaveForSampler implements rl.Trainer.
func (t *Trainer) SaveForSampler(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return call(t, ctx, "save_weights_for_sampler", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[policy.Ref] {
		return tr.SaveForSampler(ctx, name)
	})
}

// SaveState implements rl.Trainer.
func (t *Trainer) SaveState(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return call(t, ctx, "save_state", func(ctx context.Context, tr *tinker.Trainer) *rl.Future[policy.Ref] {
		return tr.SaveState(ctx, name)
	})
}

// LoadState implements rl.Trainer; after it, recoveries restore ref.
func (t *Trainer) LoadState(ctx context.Context, ref policy.Ref, withOptimizer bool) *rl.Future[struct{}] {
	f := rl.NewFuture[struct{}]()
	t.submit(ctx, job{
		kind: "load_state",
		do: func(ctx context.Context, tr *tinker.Trainer) (any, error) {
			_, err := tr.LoadState(ctx, ref, withOptimizer).Wait(ctx)
			return ref, err
		},
		resolve: func(_ any, err error) { f.Resolve(struct{}{}, err) },
	})
	return f
}
