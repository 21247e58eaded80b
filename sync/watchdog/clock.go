package watchdog

import "time"

// clock is where a Dog reads the time and sets its timer. Start uses the
// real one; the package's tests pass a fake that they advance and fire
// step by step, so no test waits on the machine's speed.
type clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, as
	// time.AfterFunc does.
	AfterFunc(d time.Duration, f func()) timer
}

// timer is the part of *time.Timer a Dog uses.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// realClock is the runtime's clock and timers.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }
