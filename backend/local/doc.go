// Package local implements the rl contracts on the embedded engine, in
// process: a Trainer that queues calls to an engine trainer on a
// sync/serial queue (one goroutine, submission order), and a Sampler that
// serves published adapter versions from its own copy of the weights.
//
// Publication goes through a [Shelf]: SaveForSampler puts an immutable
// snapshot of the adapter there (and, with a checkpoint store, also writes it
// as a PEFT checkpoint); Sampler.Load takes it from the shelf, or from the
// store or a folder when the shelf does not have it (another process
// published it). References use the Tinker form
// tinker://<run>/sampler_weights/<name>.
package local
