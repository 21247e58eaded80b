package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/backend/openai"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// backends are a job's in-process trainer and samplers on the embedded
// engine. They share one shelf, through which the trainer publishes
// versions, and one checkpoint store in the run folder.
type backends struct {
	base      *engine.Model[float32]
	name      string              // the base's name in checkpoints
	w         arithmetic.Writer   // how the task is written for the base
	tokenText func(id int) string // stop strings' token text (nil: characters)
	store     *checkpoint.Store
	shelf     *local.Shelf
	trainer   *local.Trainer
	samplers  []rl.Sampler
}

// newBackends opens the checkpoint store under dir and starts the trainer
// and cfg.Samplers samplers on base, or one backend/openai sampler per
// cfg.SamplerURLs. Call close when done.
func newBackends(ctx context.Context, cfg Config, mdl *model, dir string) (*backends, error) {
	base := mdl.base
	store, err := checkpoint.Open(filepath.Join(dir, "checkpoints"))
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	// The shelf keeps every version a run publishes (one per step, plus
	// the final one) for the evaluation after the run.
	shelf := &local.Shelf{Keep: cfg.RL.Steps + 4}
	remote := len(cfg.SamplerURLs) > 0
	trainer, err := local.NewTrainer(base, local.TrainerOptions{Run: cfg.Name, Threads: cfg.TrainerThreads, Lora: cfg.Lora,
		Shelf: shelf, Store: store, BaseModel: mdl.name, PersistSamplerWeights: remote})
	if err != nil {
		return nil, fmt.Errorf("trainer: %w", err)
	}
	b := &backends{base: base, name: mdl.name, w: mdl.w, tokenText: mdl.tokenText, store: store, shelf: shelf, trainer: trainer, samplers: make([]rl.Sampler, cfg.Samplers)}
	if remote {
		if err := b.remoteSamplers(ctx, cfg); err != nil {
			b.close()
			return nil, err
		}
		return b, nil
	}
	for i := range b.samplers {
		s, err := local.NewSampler(base, local.SamplerOptions{Threads: cfg.SamplerThreads, Shelf: shelf, Store: store, TokenText: mdl.tokenText,
			Seed: uint64(cfg.RL.Seed) + uint64(i)})
		if err != nil {
			b.close()
			return nil, fmt.Errorf("sampler %d: %w", i, err)
		}
		b.samplers[i] = s
	}
	return b, nil
}

// remoteSamplers makes one backend/openai sampler per cfg.SamplerURLs,
// loading the trainer's versions from the run's checkpoint store.
func (b *backends) remoteSamplers(ctx context.Context, cfg Config) error {
	dialect := openai.VLLM
	if cfg.SamplerDialect == "sglang" {
		dialect = openai.SGLang
	}
	resolve := func(uri string) (string, error) {
		ck, err := b.store.Resolve(uri)
		if err != nil {
			return "", err
		}
		return ck.Dir, nil
	}
	b.samplers = make([]rl.Sampler, len(cfg.SamplerURLs))
	for i, u := range cfg.SamplerURLs {
		s, err := openai.New(ctx, openai.Options{BaseURL: u, APIKey: os.Getenv("TANDEM_API_KEY"), Dialect: dialect, Model: b.name,
			ResolveCheckpoint: resolve, Seed: uint64(cfg.RL.Seed) + uint64(i)})
		if err != nil {
			return fmt.Errorf("sampler %d (%s): %w", i, u, err)
		}
		b.samplers[i] = s
	}
	return nil
}

// close stops the trainer after the calls queued on it.
func (b *backends) close() { _ = b.trainer.Close() }

// saveFinal saves what the run reached, even when it failed: the last
// step's sampler weights, persisted in the store, and the training state,
// both named "final"; it tries both even when one fails. It returns the
// sampler checkpoint's folder, and runs to the end even when ctx has ended.
func (b *backends) saveFinal(ctx context.Context, run string) (string, error) {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	if err := b.saveFinalSampler(ctx, run); err != nil {
		errs = append(errs, fmt.Errorf("sampler weights: %w", err))
	}
	if _, err := b.trainer.SaveState(ctx, "final").Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("state: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	ck, err := b.store.Get(run, policy.SamplerWeights, "final")
	if err != nil {
		return "", fmt.Errorf("sampler weights: %w", err)
	}
	return ck.Dir, nil
}

// saveFinalSampler publishes the final version and makes sure the store
// holds it (the trainer persists sampler weights only when told to).
func (b *backends) saveFinalSampler(ctx context.Context, run string) error {
	ref, err := b.trainer.SaveForSampler(ctx, "final").Wait(ctx)
	if err != nil {
		return err
	}
	if _, err := b.store.Get(run, policy.SamplerWeights, "final"); err == nil {
		return nil
	}
	return b.persistSampler(ctx, ref)
}

// persistSampler writes the adapter the trainer holds as the PEFT
// checkpoint of ref, in order with the trainer's calls.
func (b *backends) persistSampler(ctx context.Context, ref policy.Ref) error {
	_, err := b.trainer.Do(ctx, func(ctx context.Context, eng *engine.Trainer[float32]) error {
		_, err := b.store.Save(ctx, checkpoint.Meta{Run: ref.Run, Name: ref.Name, Kind: policy.SamplerWeights, Version: ref.Version,
			Step: int64(ref.Version), BaseModel: b.name}, func(dir string) error { return eng.SaveAdapter(dir) })
		return err
	}).Wait(ctx)
	return err
}

// loadBase loads the base model from path, or the shipped one when path is
// empty.
func loadBase(path string) (*engine.Model[float32], error) {
	if path == "" {
		return basemodel.Load()
	}
	return engine.LoadBase[float32](path)
}
