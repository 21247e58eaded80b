package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sync/serial"
)

// ErrClosed is the error of calls submitted after Close: the error of the
// serial.Queue the calls run on.
var ErrClosed = serial.ErrClosed

// TrainerOptions configure a Trainer. Zero values mean defaults.
type TrainerOptions struct {
	// Run names the run in references (default "local").
	Run string
	// Threads bounds the goroutines one engine call uses (default 1).
	Threads int
	// Lora selects the adapters (zero value: engine.DefaultLoraConfig()).
	Lora engine.LoraConfig
	// Shelf receives sampler weights for in-process samplers (default: a
	// new shelf, see Trainer.Shelf).
	Shelf *Shelf
	// Store, if set, receives SaveState checkpoints and, with
	// PersistSamplerWeights, every SaveForSampler version as a PEFT
	// checkpoint. SaveState and LoadState need it.
	Store                 *checkpoint.Store
	PersistSamplerWeights bool
	// BaseModel names the base in checkpoint manifests and PEFT configs.
	BaseModel string
}

// Trainer implements rl.Trainer on an engine trainer. Calls run one at a
// time, in submission order, on the goroutine of a serial.Queue the
// Trainer owns; Close waits for it. Safe for concurrent use.
type Trainer struct {
	opts TrainerOptions
	eng  *engine.Trainer[float32]
	q    serial.Queue

	// Touched only by queued jobs.
	version policy.Version
}

var _ rl.Trainer = (*Trainer)(nil)

// NewTrainer returns a trainer of a fresh LoRA adapter over base, which it
// shares read-only with the caller and the samplers (one copy of the base
// weights per process); base must not change while the trainer lives.
func NewTrainer(base *engine.Model[float32], opts TrainerOptions) (*Trainer, error) {
	if opts.Run == "" {
		opts.Run = "local"
	}
	if err := policy.ValidRunName(opts.Run); err != nil {
		return nil, fmt.Errorf("local: run: %w", err)
	}
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	if opts.Lora == (engine.LoraConfig{}) {
		opts.Lora = engine.DefaultLoraConfig()
	}
	if opts.Shelf == nil {
		opts.Shelf = &Shelf{}
	}
	eng, err := engine.NewTrainer(base, opts.Lora, engine.TrainerOptions{Threads: opts.Threads})
	if err != nil {
		return nil, fmt.Errorf("local: new trainer: %w", err)
	}
	return &Trainer{opts: opts, eng: eng}, nil
}

// Shelf returns where this trainer publishes sampler weights.
func (t *Trainer) Shelf() *Shelf { return t.opts.Shelf }

// Engine returns the engine trainer. Use it only from a job the trainer runs
// (see Do) or after Close.
func (t *Trainer) Engine() *engine.Trainer[float32] { return t.eng }

// Close waits for the queued calls to finish and for the trainer's
// goroutine to end; later calls fail with ErrClosed.
func (t *Trainer) Close() error {
	t.q.Close()
	return nil
}

// submit queues fn on the trainer's queue (see serial.Submit: a call whose
// ctx is done when its turn comes is skipped with its cause, a panic
// becomes an error) and wraps fn's error with the call's name.
func submit[T any](t *Trainer, ctx context.Context, what string, fn func(ctx context.Context) (T, error)) *rl.Future[T] {
	return serial.Submit(&t.q, ctx, func(ctx context.Context) (T, error) {
		v, err := fn(ctx)
		if err != nil {
			err = fmt.Errorf("local: %s: %w", what, err)
		}
		return v, err
	})
}

// Do queues fn to run with exclusive use of the engine trainer, in order
// with the other calls (e.g. for base-model log-probs).
func (t *Trainer) Do(ctx context.Context, fn func(ctx context.Context, eng *engine.Trainer[float32]) error) *rl.Future[struct{}] {
	return submit(t, ctx, "do", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx, t.eng)
	})
}

// ForwardBackward implements rl.Trainer.
func (t *Trainer) ForwardBackward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return submit(t, ctx, "forward_backward", func(ctx context.Context) (rl.ForwardBackwardOutput, error) {
		ex, err := toExamples(data, loss.Name)
		if err != nil {
			return rl.ForwardBackwardOutput{}, err
		}
		out, err := t.eng.ForwardBackward(ctx, ex, engine.LossSpec{Name: engine.LossName(loss.Name), Config: loss.Config})
		return fromOutput(out), err
	})
}

// Forward implements rl.Trainer.
func (t *Trainer) Forward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return submit(t, ctx, "forward", func(ctx context.Context) (rl.ForwardBackwardOutput, error) {
		ex, err := toExamples(data, loss.Name)
		if err != nil {
			return rl.ForwardBackwardOutput{}, err
		}
		out, err := t.eng.Forward(ctx, ex, engine.LossSpec{Name: engine.LossName(loss.Name), Config: loss.Config})
		return fromOutput(out), err
	})
}

// OptimStep implements rl.Trainer.
func (t *Trainer) OptimStep(ctx context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	return submit(t, ctx, "optim_step", func(ctx context.Context) (rl.OptimStepOutput, error) {
		m, err := t.eng.OptimStep(p)
		if err != nil {
			return rl.OptimStepOutput{}, err
		}
		t.version++
		return rl.OptimStepOutput{Version: t.version, Metrics: m}, nil
	})
}

func (t *Trainer) uri(kind policy.Kind, name string) string {
	return checkpoint.URI{Scheme: checkpoint.SchemeTinker, Run: t.opts.Run, Kind: kind, Name: name}.String()
}

// SaveForSampler implements rl.Trainer: it shelves a snapshot of the
// adapter (and persists it when configured).
func (t *Trainer) SaveForSampler(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return submit(t, ctx, "save_weights_for_sampler", func(ctx context.Context) (policy.Ref, error) {
		if err := checkpoint.ValidName(name); err != nil {
			return policy.Ref{}, err
		}
		ref := policy.Ref{Run: t.opts.Run, Version: t.version, Name: name, URI: t.uri(policy.SamplerWeights, name), Kind: policy.SamplerWeights, Created: time.Now().UTC()}
		ad := t.eng.Adapter()
		if t.opts.Store != nil && t.opts.PersistSamplerWeights {
			if _, err := t.save(ctx, policy.SamplerWeights, name, func(dir string) error {
				return engine.SaveAdapter(dir, ad, t.opts.BaseModel)
			}); err != nil {
				return policy.Ref{}, err
			}
		}
		t.opts.Shelf.Put(ref.URI, ref.Version, ad)
		return ref, nil
	})
}

// SaveState implements rl.Trainer; it needs a store.
func (t *Trainer) SaveState(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return submit(t, ctx, "save_state", func(ctx context.Context) (policy.Ref, error) {
		if t.opts.Store == nil {
			return policy.Ref{}, errors.New("no checkpoint store configured")
		}
		ck, err := t.save(ctx, policy.State, name, t.eng.SaveState)
		if err != nil {
			return policy.Ref{}, err
		}
		return ck.Ref(), nil
	})
}

func (t *Trainer) save(ctx context.Context, kind policy.Kind, name string, write func(dir string) error) (checkpoint.Checkpoint, error) {
	meta := checkpoint.Meta{Run: t.opts.Run, Name: name, Kind: kind, Version: t.version, Step: int64(t.version), BaseModel: t.opts.BaseModel}
	return t.opts.Store.Save(ctx, meta, write)
}

// LoadState implements rl.Trainer: ref may be a tinker:// URI of this
// trainer's store or a local folder. The trainer's version becomes ref's.
func (t *Trainer) LoadState(ctx context.Context, ref policy.Ref, withOptimizer bool) *rl.Future[struct{}] {
	return submit(t, ctx, "load_state", func(ctx context.Context) (struct{}, error) {
		dir, version, err := resolveDir(t.opts.Store, ref)
		if err != nil {
			return struct{}{}, err
		}
		if err := t.eng.LoadState(dir, withOptimizer); err != nil {
			return struct{}{}, err
		}
		t.version = version
		return struct{}{}, nil
	})
}

// resolveDir finds the folder a ref points at, and the version it holds
// (from its manifest when it has one, else ref.Version).
func resolveDir(store *checkpoint.Store, ref policy.Ref) (string, policy.Version, error) {
	u, err := checkpoint.ParseURI(ref.URI)
	if err != nil {
		return "", 0, err
	}
	if u.Scheme == checkpoint.SchemeLocal {
		if ck, err := checkpoint.OpenDir(u.Path); err == nil {
			return ck.Dir, ck.Version, nil
		}
		return u.Path, ref.Version, nil
	}
	if store == nil {
		return "", 0, fmt.Errorf("%s: no checkpoint store configured", ref.URI)
	}
	ck, err := store.Get(u.Run, u.Kind, u.Name)
	if err != nil {
		return "", 0, err
	}
	return ck.Dir, ck.Version, nil
}
