// Package watchdog reports waits that take too long: a fully asynchronous
// run that hangs should say what it is waiting for, not sit silent.
package watchdog

import (
	"sync"
	"time"
)

// Dog calls report every period while a wait lasts. It uses a runtime timer,
// not a goroutine of its own.
type Dog struct {
	mu      sync.Mutex
	clock   clock
	stopped bool
	start   time.Time
	every   time.Duration
	report  func(waited time.Duration)
	timer   timer
}

// Start begins watching a wait: report(waited) is called after every, then
// every period again, until Stop. A non-positive every disables the dog.
func Start(every time.Duration, report func(waited time.Duration)) *Dog {
	return start(realClock{}, every, report)
}

// start is Start on clk.
func start(clk clock, every time.Duration, report func(waited time.Duration)) *Dog {
	d := &Dog{clock: clk, start: clk.Now(), every: every, report: report}
	if every > 0 && report != nil {
		d.mu.Lock()
		d.timer = clk.AfterFunc(every, d.fire)
		d.mu.Unlock()
	}
	return d
}

func (d *Dog) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.report(d.clock.Now().Sub(d.start))
	d.timer.Reset(d.every)
}

// Stop ends the watch; after it returns, report is not called again. It
// returns how long the wait lasted. Safe to call more than once.
func (d *Dog) Stop() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
	return d.clock.Now().Sub(d.start)
}
