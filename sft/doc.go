// Package sft is supervised fine-tuning over an rl.Trainer: a JSONL dataset
// of {"prompt", "completion"} pairs ([ReadJSONL]), datums that train the
// cross_entropy loss on completion tokens only ([Datums]), and a [Loop] with
// batches, epochs, a learning-rate [Schedule] (linear warm-up, then
// constant, linear or cosine decay), checkpoints every N steps through
// SaveState, and per-step metrics (loss per trained token).
//
// The loop works with any trainer: the embedded engine (backend/local), a
// Tinker-compatible service, or a fake in tests.
package sft
