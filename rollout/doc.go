// Package rollout turns dataset items into trajectory groups: it defines
// the environment contract for single- and multi-turn episodes, the dataset
// contract, the Runner that rolls out one group against a sampler, and the
// bounded pool of worker goroutines that feeds the replay buffer.
//
// User code — environments and reward functions — runs behind a recover: a
// panic becomes a *PanicError carrying the stack, the rollout fails, the
// failure is counted and the run goes on. Sampler errors that are transient
// (rl.IsTransient) are retried with exponential back-off; others fail the
// rollout.
package rollout
