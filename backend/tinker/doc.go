// Package tinker is a client for the Tinker training API that implements
// tandem's rl.Trainer and rl.Sampler, so a tandem loop can train on any
// Tinker-compatible service: Tinker itself, Baseten Loops, SkyRL's server,
// TuFT, or `tandem serve`.
//
// It keeps to the shapes and habits of the official Python SDK v0.3.0 rather
// than to any one server's: the same JSON (package wire), the X-API-Key
// header, a session with a heartbeat every 10 s, training calls numbered
// with an increasing seq_id per model and sent one after another in that
// order, futures polled through retrieve_future (try_again and 408 poll
// again, 410 means the future expired), and retries with exponential
// backoff exactly where the SDK retries: connection errors and statuses
// 408, 409, 429 and 5xx (and whatever a server marks with
// X-Should-Retry: true). Every POST carries an X-Idempotency-Key that stays
// the same across the retries of one call, and training calls carry their
// seq_id, so a retry is answered, by a server that honours either, with the
// first attempt's future instead of applying a step twice.
//
// The client tracks the policy version itself: the number of successful
// optimizer steps since the model was created, or the version of the state
// last loaded. OptimStepOutput.Version and the policy.Ref of a save carry it.
package tinker
