// Package samplerpool spreads sampling over many replicas of a policy: a
// Pool is an rl.Sampler over N named rl.Samplers of any backend (embedded,
// Tinker-compatible, OpenAI-compatible) that routes each call to the least
// busy healthy replica, fans Load out to all of them, ejects a replica that
// keeps failing, probes it with back-off and re-admits it once it answers and
// has re-loaded the newest adapter.
//
// # Routing
//
// Sample goes to one replica chosen among those that are not ejected, have
// not already failed this call, and are under Config.MaxOutstanding: first
// the replicas serving the newest version any of them serves, then, among
// those, the one with the fewest calls outstanding; ties go to the lowest
// index (the order of the replicas given to New). Routing is deterministic,
// so the reference model in the tests can predict every choice. A replica
// that never completed a Load ranks below every loaded one.
//
// The output keeps the replica's Version: when replicas serve different
// versions (a Load fan-out in progress, a replica whose Load failed), each
// sample reports the version that produced it and staleness accounting
// stays exact.
//
// # Failures and retries
//
// A call that fails with a transient error (Config.IsTransient, by default
// IsTransient: rl.IsTransient, a Retryable() status, or a connection-level
// error) counts against its replica; Config.MaxFailures consecutive ones
// eject it; a call that began before the replica's latest re-admission
// (cut off by the outage that ejected it, ending only after the replica
// came back) is counted but neither adds to that run nor ejects it. The
// call is then retried on another replica, at most
// Config.Retries times, and never again on a replica where it already
// failed. A retried call's result is whatever the next replica returns:
// the failed attempt returned nothing, so nothing is trained twice. A
// non-transient error, and the caller's own cancellation, are returned as
// they are and never count against a replica.
//
// # Health
//
// The health loop (Run, or Start and Close) probes each ejected replica
// with its Health(ctx) method when it has one (see HealthChecker) or a
// one-token Sample otherwise, on the back-off schedule of Config.Backoff.
// A probe that succeeds re-loads the newest ref (a replica that restarted
// has lost its adapters) before the replica is re-admitted. A replica whose
// Load failed stays routable (it still serves its older version, at lower
// preference) and is marked stale; the health loop re-loads it with
// back-off.
//
// # Structure
//
// The routing and health rules live in core, a single-threaded type with no
// goroutines and no clock (time is passed in), tested step by step; Pool
// wraps it with one mutex, the replica calls and the health goroutine.
package samplerpool
