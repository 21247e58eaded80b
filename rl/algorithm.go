package rl

import (
	"context"

	"github.com/tandemrl/tandem/policy"
)

// Algorithm turns trajectory groups into a training batch: advantages,
// datums and the loss. GRPO, PPO and their off-policy corrections plug in
// here without touching the pipeline (rl/algo's GRPO is the pipeline's
// default).
//
// The loop calls Batch from one goroutine, once per optimizer step, with
// the groups of that step and the trainer (for algorithms that need an extra
// forward pass, e.g. a proximal policy). step is the policy version the
// trainer holds before the step. The loop does not call Batch again until
// the trainer has resolved every future of the previous batch, so an
// Algorithm may reuse the memory of the Batch it returned last (datums,
// slices, maps); trainers must not keep datums after resolving.
//
// The groups, and the trajectories they hold, belong to the loop: they are
// valid until the step's futures resolve, after which the loop recycles
// their memory for new rollouts. An Algorithm that keeps anything from them
// beyond the step (samples to log later, say) must copy it.
type Algorithm interface {
	Batch(ctx context.Context, t Trainer, step policy.Version, groups []Group) (Batch, error)
}

// Batch is what one optimizer step trains on.
type Batch struct {
	// Datums are passed to Trainer.ForwardBackward with Loss.
	Datums []Datum
	Loss   Loss
	// Actions locates the sampled tokens inside the datums: the positions
	// whose "logprobs" input is a sampler log-prob. The loop compares those
	// with the trainer's log-probs to report the sampler/trainer gap.
	Actions []Span
	// Metrics are reported with the step (e.g. "advantage:mean").
	Metrics map[string]float64
	// GapSum and GapTokens carry a sampler/trainer log-prob gap the
	// algorithm measured itself (Σ|μ − p| over GapTokens action tokens),
	// for batches whose Actions cannot point at sampler log-probs because
	// the "logprobs" inputs hold something else (e.g. a proximal policy).
	// The loop uses them when Actions is empty.
	GapSum    float64
	GapTokens int
}

// Preparer is an optional extension of Algorithm: the loop calls Prepare
// once per learner step with all of the step's groups before it splits them
// into Config.Substeps batches (e.g. to compute a proximal policy for the
// whole step, as AReaL's decoupled PPO does).
type Preparer interface {
	Prepare(ctx context.Context, t Trainer, step policy.Version, groups []Group) error
}

// OutputMetrics is an optional extension of Algorithm: after the
// forward-backward of each Batch the loop passes the trainer's output, and
// reports the metrics returned (e.g. the importance ratio and the share of
// tokens a clip acted on).
type OutputMetrics interface {
	OutputMetrics(out ForwardBackwardOutput) (map[string]float64, error)
}

// Span is the half-open range [Start, End) of loss-input positions of datum
// Datum.
type Span struct {
	Datum, Start, End int
	// Replica is the sampler replica of the group the action came from
	// (Group.Replica), for the per-replica log-prob gap; "" when unknown.
	Replica string
}
