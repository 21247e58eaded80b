// Package tinker is a client for the Tinker training API that implements
// tandem's rl.Trainer and rl.Sampler, so a tandem loop can train on any
// Tinker-compatible service: Tinker itself, Baseten Loops, SkyRL's server,
// TuFT, or `tandem serve`.
//
// It speaks two generations of the protocol, chosen in New (see Mode): to a
// server that answers POST client/config (SDK ≥ 0.18's first call), that of
// SDK v0.25.0 — forward and forward_backward sent to forward_backward as
// protobuf (forward_only set for a forward), their results and samples
// polled with Accept: application/x-protobuf, chunks bounded by the
// server's fwdbwd_max_chunk_len and fwdbwd_max_chunk_bytes_count; to one
// that answers 404, or with Options.ForceJSON, the JSON of SDK v0.3.0. In
// both, a poll's answer is decoded by its Content-Type, so a server that
// answers JSON is understood either way.
//
// It keeps to the shapes and habits of the official Python SDK rather
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
