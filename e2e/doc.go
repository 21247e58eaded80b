// Package e2e runs tandem across processes: its tests build the tandem
// command, start `tandem serve --role trainer` and `tandem serve --role
// sampler` as two processes sharing a checkpoint folder, and drive the RL
// loop (rl/loop) from the test process through backend/tinker, on the
// arithmetic task. One test checks that the loop learns as it does in
// process; another kills the processes (SIGKILL) mid-run, restarts them,
// and audits the trainer's persisted step log and every checkpoint.
//
// The package itself holds what such a client needs to ride out those
// kills: a Trainer that, when its server stops knowing its model, opens a
// new session, recreates the model, loads the last saved state (with the
// optimizer) and replays the calls made since; and a Sampler that reopens
// its session and reloads the served adapter. The tests skip under -short.
package e2e
