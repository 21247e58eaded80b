// Package e2e runs tandem across processes: its tests build the tandem
// command, start `tandem serve --role trainer` and `tandem serve --role
// sampler` as two processes sharing a checkpoint folder, and drive the RL
// loop (rl/loop) from the test process through backend/tinker, on the
// arithmetic task. One test checks that the loop learns as it does in
// process; another kills the processes (SIGKILL) mid-run, restarts them,
// and audits the trainer's persisted step log and every checkpoint.
//
// The client side that rides out those kills is backend/tinker/resilient.
// The process tests skip under -short.
package e2e
