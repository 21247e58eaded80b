// Package rl holds tandem's vocabulary: the Trainer and Sampler contracts
// that the training loop drives, the Tinker-shaped request and response types
// (Datum, ModelInput, TensorData, SamplingParams, AdamParams), and the loss
// names. Implementations live in backend/*; the pipeline that drives them
// lives in rl/loop.
//
// It also holds what the pipeline moves and how it is configured: Config
// (with Validate), the trajectory types (Transition, Trajectory, Group —
// a group tagged with the policy version that generated it), and the
// Algorithm hook that turns groups into a training Batch, with
// GroupRelative as the default. ErrTransient and IsTransient say which
// errors are worth retrying.
package rl
