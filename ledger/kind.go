package ledger

import (
	"context"
	"errors"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

// Kind names the kind of a rollout failure, as the ledger counts it:
// "panic:<where>" for a panic in user code (rollout.PanicError, e.g.
// "panic:reward"), "too_many_turns", "transient" (retries exhausted on an
// rl.IsTransient error), "cancelled" or "deadline" for a context's errors,
// else "error".
func Kind(err error) string {
	var pe *rollout.PanicError
	switch {
	case errors.As(err, &pe):
		return "panic:" + pe.Where
	case errors.Is(err, rollout.ErrTooManyTurns):
		return "too_many_turns"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case rl.IsTransient(err):
		return "transient"
	}
	return "error"
}
