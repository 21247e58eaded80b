package localbackend

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/wire"
)

// ErrUnknownBase is matched by a request for a base model the backend does
// not host.
var ErrUnknownBase = errors.New("localbackend: unknown base model")

// ErrConfig is matched by every configuration error.
var ErrConfig = errors.New("localbackend: bad config")

// Options configure a Backend. Zero values mean the defaults in the comments.
type Options struct {
	// Bases maps each hosted base model name to its weights (required, at
	// least one). The weights are only read: every trainer and sampler
	// copies what it changes.
	Bases map[string]*engine.Model[float32]
	// Store receives every checkpoint and resolves the ones samplers load
	// (required).
	Store *checkpoint.Store
	// TrainerThreads bounds the goroutines one training call uses; default 1.
	TrainerThreads int
	// SamplerThreads bounds the goroutines one sample call uses; default 1.
	SamplerThreads int
	// Shelf keeps recent sampler weights in memory for samplers in this
	// process; default a new shelf (keeping the newest 16).
	Shelf *local.Shelf
	// Seed seeds the samplers' random streams (for sample calls that bring
	// no seed): the n-th sampler made gets a stream derived from (Seed, n),
	// so the samplers a server makes for successive versions never replay
	// each other's draws. Zero means a seed drawn at random, so that two
	// processes differ too.
	Seed uint64
	// TokenText gives, per base name, one token's text, which samplers
	// match stop strings against (a Hugging Face model's tokenizer); a base
	// without one uses the shipped character vocabulary's.
	TokenText map[string]func(id int) string
}

// Backend makes local trainers and samplers; safe for concurrent use.
type Backend struct {
	opts     Options
	samplers atomic.Uint64 // samplers made so far
}

var _ server.Backend = (*Backend)(nil)

// New checks opts and returns a Backend.
func New(opts Options) (*Backend, error) {
	if len(opts.Bases) == 0 {
		return nil, fmt.Errorf("%w: no base model", ErrConfig)
	}
	for name, m := range opts.Bases {
		if name == "" || m == nil {
			return nil, fmt.Errorf("%w: base model %q has no weights or no name", ErrConfig, name)
		}
	}
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: no checkpoint store", ErrConfig)
	}
	if opts.TrainerThreads < 0 || opts.SamplerThreads < 0 {
		return nil, fmt.Errorf("%w: negative thread count (trainer %d, sampler %d); want ≥ 1 or 0 for the default", ErrConfig, opts.TrainerThreads, opts.SamplerThreads)
	}
	opts.TrainerThreads = max(opts.TrainerThreads, 1)
	opts.SamplerThreads = max(opts.SamplerThreads, 1)
	if opts.Shelf == nil {
		opts.Shelf = &local.Shelf{}
	}
	for opts.Seed == 0 {
		opts.Seed = rand.Uint64()
	}
	return &Backend{opts: opts}, nil
}

// Models describes the hosted base models for server.Config.Models, sorted
// by name, so the server checks token ids and lengths before a call reaches
// the engine.
func (b *Backend) Models() []server.ModelSpec {
	out := make([]server.ModelSpec, 0, len(b.opts.Bases))
	for name, m := range b.opts.Bases {
		out = append(out, server.ModelSpec{Name: name, MaxContextLength: m.Config.Context, VocabSize: m.Config.Vocab})
	}
	slices.SortFunc(out, func(a, b server.ModelSpec) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func (b *Backend) base(name string) (*engine.Model[float32], error) {
	m, ok := b.opts.Bases[name]
	if !ok {
		names := make([]string, 0, len(b.opts.Bases))
		for n := range b.opts.Bases {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w %q; this server hosts %v", ErrUnknownBase, name, names)
	}
	return m, nil
}

// NewTrainer implements server.Backend: a local trainer of a fresh adapter
// with spec's LoRA shape, persisting to the shared store. The returned
// trainer is an io.Closer (the server closes it when the model is dropped).
func (b *Backend) NewTrainer(_ context.Context, spec server.TrainerSpec) (rl.Trainer, error) {
	base, err := b.base(spec.Base)
	if err != nil {
		return nil, err
	}
	lora, err := LoraConfig(spec.Lora)
	if err != nil {
		return nil, err
	}
	return local.NewTrainer(base, local.TrainerOptions{
		Run: spec.Run, Threads: b.opts.TrainerThreads, Lora: lora, Shelf: b.opts.Shelf,
		Store: b.opts.Store, PersistSamplerWeights: true, BaseModel: spec.Base,
	})
}

// NewSampler implements server.Backend: a local sampler of base (version 0
// until the server loads an adapter) that finds adapters on the shelf or in
// the store, with a random stream of its own (see Options.Seed).
func (b *Backend) NewSampler(_ context.Context, base string) (rl.Sampler, error) {
	m, err := b.base(base)
	if err != nil {
		return nil, err
	}
	n := b.samplers.Add(1)
	seed := rand.New(rand.NewPCG(b.opts.Seed, n)).Uint64()
	return local.NewSampler(m, local.SamplerOptions{Threads: b.opts.SamplerThreads, Shelf: b.opts.Shelf, Store: b.opts.Store, Seed: seed,
		TokenText: b.opts.TokenText[base]})
}

// LoraConfig converts create_model's lora_config to the engine's: the same
// rank, seed (0 when absent) and trained parts, alpha left at the engine's
// default. Rank must be positive and at least one part trained.
func LoraConfig(w wire.LoraConfig) (engine.LoraConfig, error) {
	l := engine.LoraConfig{Rank: w.Rank, TrainAttn: w.TrainAttn, TrainMLP: w.TrainMLP, TrainUnembed: w.TrainUnembed}
	if w.Seed != nil {
		l.Seed = *w.Seed
	}
	if err := l.Validate(); err != nil {
		return engine.LoraConfig{}, fmt.Errorf("lora_config: %w", err)
	}
	return l, nil
}

// DescribeLora implements server.LoraDescriber: the LoRA settings in the
// PEFT config of the checkpoint ref names (adapters and training states
// both hold one).
func (b *Backend) DescribeLora(_ context.Context, ref policy.Ref) (wire.LoraConfig, error) {
	ck, err := b.opts.Store.ResolveRef(ref)
	if err != nil {
		return wire.LoraConfig{}, err
	}
	l, err := engine.ReadLoraConfig(filepath.Dir(ck.Path(checkpoint.AdapterConfig)))
	if err != nil {
		return wire.LoraConfig{}, err
	}
	return wire.LoraConfig{Rank: l.Rank, TrainUnembed: l.TrainUnembed, TrainMLP: l.TrainMLP, TrainAttn: l.TrainAttn}, nil
}
