// Package loop is tandem's RL driver: one call wires a dataset, rollout
// workers, the replay buffer, a learner goroutine, publication and weight
// sync, and runs them until the step budget is spent, the data runs out, or
// the context ends.
//
//	dataset ─► rollout workers ─► buffer ─► learner ─► trainer
//	    ▲   (admitted by the gate)            │
//	    └── requeue ◄── over-stale            └─► publish ─► weight sync ─► samplers
//
// The learner turns each step's groups into batches with Deps.Algorithm
// (rl/algo's GRPO by default), calling it once per Config.Substeps.
//
// MaxStaleness k = 0 gives synchronous RL (after each step nothing is
// sampled until the samplers serve the new version); k ≥ 1 overlaps
// sampling and training and never trains on a group more than k versions
// old. The stale policy (pace, drop, requeue) decides what happens to a
// group that would be older; see package buffer and sync/staleness.
//
// Every wait has a context and a watchdog that logs what it waits for
// (Config.Watchdog): the learner waiting for a batch, for the trainer, or
// for the samplers to serve a version.
//
// Telemetry goes through the OpenTelemetry API only: a span per learner
// step, publish and weight load, metrics for reward, staleness, samples and
// step time. Per-rollout spans are recorded as children of the span in
// Run's context, so wrap Run in a recording span to trace every sample.
//
// Every goroutine Run starts has ended when it returns. Groups accepted into
// the buffer are either trained, dropped/requeued (counted), or handed back
// in the Report at the end.
package loop
