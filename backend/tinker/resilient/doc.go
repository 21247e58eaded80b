// Package resilient wraps backend/tinker's Trainer and Sampler so that a
// training loop rides out a restart of the server behind them (a crash, a
// SIGKILL, a redeploy): a Trainer that, when its server stops knowing its
// model, opens a new session, recreates the model, loads the last saved
// state (with the optimizer) and replays the calls made since, so no
// optimizer step is lost or applied twice; and a Sampler that reopens its
// session and reloads the adapter it served. Recoverable says which errors
// mean "the server lost my state" as opposed to "the call was wrong".
//
// The package's tests drive both against an in-process server over
// servertest's fake backend that they restart at chosen points; the e2e
// package's fault test drives them against `tandem serve` processes that
// it kills and restarts.
package resilient
