package rl

import "errors"

// ErrTransient marks an error worth retrying: a timeout, a 429 or 503 from a
// service, a sampler that is reloading. Wrap it (fmt.Errorf("...: %w",
// ErrTransient)) or implement Temporary() bool on the error type; IsTransient
// recognizes both.
var ErrTransient = errors.New("rl: transient error")

// IsTransient reports whether err (or any error it wraps) is
// ErrTransient or has a Temporary() method that returns true. Context
// cancellation is never transient.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTransient) {
		return true
	}
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}
