// Package server serves tandem trainers and samplers over the Tinker
// training API (the JSON protocol of the official Python SDK v0.3.0, see
// package wire), so that Tinker clients — the Python SDK, tandem's own
// backend/tinker, other Tinker-compatible clients — can drive them.
//
// The server is backend-agnostic: it asks a [Backend] for one rl.Trainer
// per create_model and for rl.Samplers to serve saved adapters. What it
// adds is the protocol: sessions with heartbeats and expiry, futures
// polled through retrieve_future, training calls applied strictly in
// seq_id order per model (a duplicate seq_id or X-Idempotency-Key gets the
// first call's future back, never a second application), back-pressure
// (429) when too much work is in flight, API keys with per-key isolation
// (another key's models and sessions answer 404), bounded bodies, and
// checkpoint names that cannot escape a folder.
//
// A [Server] is an http.Handler. Its state lives in memory; the step log
// of each model ([Server.StepLog]) records every applied training call so
// tests can check that none was lost or applied twice (Options.OnStep can
// persist it; `tandem serve` appends it to a file, see package steplog).
//
// Tandem extensions, which other clients ignore: sample results carry
// policy_version, the adapter version that produced them; an asample
// request may carry min_policy_version, and is then answered from the
// newest sampler checkpoint of the same run at least that new, waiting up
// to Config.VersionWait for it to be published (wire.SampleRequest); GET
// training_runs/{id}/step_log returns a model's step log.
package server
