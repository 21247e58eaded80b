package rl

import (
	"context"

	"github.com/tandemrl/tandem/policy"
)

// Trainer runs forward/backward passes and optimizer steps on a LoRA adapter
// over a frozen base model.
//
// Every method queues its call and returns at once; calls are applied in
// submission order, one at a time. A caller that needs the result waits on
// the Future; a caller that wants throughput submits ForwardBackward and
// OptimStep back to back and waits on both. Implementations are safe for
// concurrent use, but calls from different goroutines are ordered only by
// when they were submitted.
type Trainer interface {
	// ForwardBackward computes loss over data and accumulates gradients of
	// the adapter parameters.
	ForwardBackward(ctx context.Context, data []Datum, loss Loss) *Future[ForwardBackwardOutput]
	// Forward computes the loss and per-token log-probs without gradients.
	Forward(ctx context.Context, data []Datum, loss Loss) *Future[ForwardBackwardOutput]
	// OptimStep applies the accumulated gradients with Adam and clears them;
	// the policy version increases by one.
	OptimStep(ctx context.Context, p AdamParams) *Future[OptimStepOutput]
	// SaveForSampler publishes the current adapter for samplers under name;
	// the Ref carries the current version.
	SaveForSampler(ctx context.Context, name string) *Future[policy.Ref]
	// SaveState saves adapter and optimizer state under name.
	SaveState(ctx context.Context, name string) *Future[policy.Ref]
	// LoadState restores a state saved by SaveState; withOptimizer also
	// restores the optimizer's moments and step count.
	LoadState(ctx context.Context, ref policy.Ref, withOptimizer bool) *Future[struct{}]
}

// Sampler generates completions from a published adapter version. Sample
// blocks; concurrency comes from calling it from many goroutines.
type Sampler interface {
	// Sample draws n completions of prompt. The output carries the version
	// that produced it; a sampler never reports a version it has not loaded.
	Sample(ctx context.Context, prompt ModelInput, n int, p SamplingParams) (SampleOutput, error)
	// Load makes the sampler serve ref's version for calls that start after
	// Load returns. Calls already running finish on the version they began with.
	Load(ctx context.Context, ref policy.Ref) error
}
