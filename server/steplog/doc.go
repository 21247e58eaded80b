// Package steplog keeps a server's step log in a file that outlives the
// process, and audits it.
//
// A Writer appends one JSON line per finished training call (a Record: the
// server.StepEntry plus the model, the process id and the time); `tandem
// serve` hooks it to server.Options.OnStep. Read parses such a file back,
// skipping a final line that a killed process left half written. Audit
// checks a log written by a run whose trainer process was killed and
// restarted, and resumed each time by load_weights from a saved state:
//
//   - within one model, every seq_id is applied at most once, and the
//     versions advance by exactly one per applied optim_step;
//   - each restarted model's first state-changing call is a load_weights of
//     a version that an earlier model saved (save_weights);
//   - following those loads back from the last model gives the lineage of
//     the final weights, which must hold versions 1..final exactly once.
//
// Optimizer steps an earlier model applied after its last save (lost with
// the killed process and redone by the client) are not part of the lineage;
// Audit counts them as rolled back.
package steplog
