// Package train runs a training job end to end on the embedded engine: it
// builds the trainer and samplers, the task's dataset and rewards, runs the
// RL loop (package rl/loop), writes the run folder (resolved config,
// metrics.jsonl, checkpoints, plots), evaluates held-out accuracy and returns
// a summary. `tandem train` is a thin command line over Run.
//
// Held-out accuracy is measured the way the job trains: one sample per
// held-out problem at the training temperature, graded by the reward's
// correctness term. Evaluation snapshots are taken during the run (cheaply, in
// memory) and evaluated after it, so evaluation never slows the loop being
// timed.
package train
