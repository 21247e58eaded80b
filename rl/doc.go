// Package rl holds tandem's vocabulary: the Trainer and Sampler contracts
// that the training loop drives, the Tinker-shaped request and response types
// (Datum, ModelInput, TensorData, SamplingParams, AdamParams), and the loss
// names. Implementations live in backend/*; the pipeline that drives them
// lives in rl/loop.
package rl
