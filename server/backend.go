package server

import (
	"context"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// TrainerSpec is what create_model asks a Backend for.
type TrainerSpec struct {
	// Run is the model id the server gave the new model; trainers name
	// their checkpoints under it.
	Run  string
	Base string
	Lora wire.LoraConfig
}

// Backend makes the trainers and samplers a Server hosts. NewTrainer is
// called once per create_model; NewSampler once per adapter (or base
// model) the server starts serving. Both may block (loading weights);
// ctx bounds them. Implementations must be safe for concurrent use.
type Backend interface {
	NewTrainer(ctx context.Context, spec TrainerSpec) (rl.Trainer, error)
	NewSampler(ctx context.Context, base string) (rl.Sampler, error)
}

// Checkpoint is one saved adapter a server knows: its tinker path, what the
// backend returned when saving it, and the base model it adapts.
type Checkpoint struct {
	Path    wire.TinkerPath
	Ref     policy.Ref
	Base    string
	Created time.Time
	Expires time.Time // zero: never (a save's ttl_seconds sets it)
}

// expired reports whether c has expired at now.
func (c Checkpoint) expired(now time.Time) bool {
	return !c.Expires.IsZero() && !now.Before(c.Expires)
}

// CheckpointStore lets a server find checkpoints it did not save itself
// (e.g. a sampler process serving what a trainer process saved into a
// shared store). Resolve returns the checkpoint a path names or an error
// wrapping ErrNotFound. Owner is the tenant asking (a stable hash of its
// API key), so stores can keep tenants apart.
type CheckpointStore interface {
	Resolve(ctx context.Context, owner string, path wire.TinkerPath) (Checkpoint, error)
	List(ctx context.Context, owner, run string) ([]Checkpoint, error)
}

// ArchiveLinker is an optional CheckpointStore extension: a download URL
// for a checkpoint archive, answered as a 302 by the archive endpoint.
type ArchiveLinker interface {
	ArchiveURL(ctx context.Context, owner string, path wire.TinkerPath) (url string, expires time.Time, err error)
}

// CheckpointRecorder is an optional CheckpointStore extension: a server
// records every checkpoint it saves, so that other servers sharing the
// store (a sampler process next to a trainer process) can resolve it.
type CheckpointRecorder interface {
	Record(ctx context.Context, owner string, ck Checkpoint) error
}

// CheckpointDeleter is an optional CheckpointStore extension used by
// DELETE training_runs/{id}/checkpoints/{kind}/{name}.
type CheckpointDeleter interface {
	Delete(ctx context.Context, owner string, path wire.TinkerPath) error
}

// LoraDescriber is an optional Backend extension: the LoRA settings a
// saved checkpoint was trained with, read from the checkpoint itself, for
// weights_info (a run resumed after a restart has no live model to ask).
type LoraDescriber interface {
	DescribeLora(ctx context.Context, ref policy.Ref) (wire.LoraConfig, error)
}
