package rollout

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic in user code (an environment, a problem or a
// reward function), recovered by the rollout. It fails that rollout only.
type PanicError struct {
	Where string // "env.Step", "reward", ...
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("rollout: panic in %s: %v", e.Where, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// guard runs f and turns a panic into a *PanicError.
func guard[T any](where string, f func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Where: where, Value: r, Stack: debug.Stack()}
		}
	}()
	return f()
}
