// Package rl holds tandem's contracts and vocabulary, and no algorithm or
// driver of its own: the Trainer and Sampler contracts that the training
// loop drives, the Tinker-shaped request and response types (Datum,
// ModelInput, TensorData, SamplingParams, AdamParams), and the loss names.
// Implementations live in backend/*; the pipeline that drives them lives in
// rl/loop; the algorithms live in rl/algo.
//
// It also holds what the pipeline moves and how it is configured: Config
// (with Validate; the algorithm's own settings live in rl/algo's Config),
// the trajectory types (Transition, Trajectory, Group — a group tagged with
// the policy version that generated it), and the Algorithm contract that
// turns groups into a training Batch, with its optional extensions Preparer
// and OutputMetrics. ErrTransient and IsTransient say which errors are
// worth retrying.
package rl
