package watchdog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the test advances by hand. It holds at most one
// timer, the Dog's; fire moves time to that timer's deadline and runs its
// function on the test's goroutine.
type fakeClock struct {
	now     time.Time
	f       func()
	at      time.Time
	armed   bool
	started int // AfterFunc calls
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) timer {
	c.started++
	c.f, c.at, c.armed = f, c.now.Add(d), true
	return fakeTimer{c}
}

// fire advances to the armed timer's deadline and runs it.
func (c *fakeClock) fire(t *testing.T) {
	t.Helper()
	require.True(t, c.armed, "no timer armed")
	c.now, c.armed = c.at, false
	c.f()
}

type fakeTimer struct{ c *fakeClock }

func (t fakeTimer) Reset(d time.Duration) bool {
	was := t.c.armed
	t.c.at, t.c.armed = t.c.now.Add(d), true
	return was
}

func (t fakeTimer) Stop() bool {
	was := t.c.armed
	t.c.armed = false
	return was
}

func TestReportsEveryPeriodUntilStopped(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{now: time.Unix(1000, 0)}
	const every = 2 * time.Second
	var got []time.Duration
	d := start(clk, every, func(w time.Duration) { got = append(got, w) })
	assert.Empty(t, got, "nothing before the first period")
	for range 3 {
		clk.fire(t)
	}
	assert.Equal(t, []time.Duration{every, 2 * every, 3 * every}, got, "one report a period, each with the time waited so far")
	assert.True(t, clk.armed, "the timer is set again after each report")

	clk.now = clk.now.Add(every / 2)
	assert.Equal(t, 3*every+every/2, d.Stop(), "Stop returns how long the wait lasted")
	assert.False(t, clk.armed, "Stop stops the timer")
	// A timer that went off as Stop ran still calls fire: it must not report.
	clk.f()
	assert.Len(t, got, 3, "no report after Stop")
	assert.Equal(t, 3*every+every/2, d.Stop(), "a second Stop is harmless")
	assert.Equal(t, 1, clk.started, "one timer, reset each period")
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		every  time.Duration
		report func(time.Duration)
	}{
		"zero period":     {0, func(time.Duration) { t.Error("disabled dog reported") }},
		"negative period": {-time.Second, func(time.Duration) { t.Error("disabled dog reported") }},
		"no report":       {time.Second, nil},
	} {
		clk := &fakeClock{now: time.Unix(1000, 0)}
		d := start(clk, c.every, c.report)
		assert.Zero(t, clk.started, "%s: no timer", name)
		clk.now = clk.now.Add(time.Minute)
		assert.Equal(t, time.Minute, d.Stop(), "%s: Stop still measures the wait", name)
	}
}

// TestRealClock: Start on the runtime's timers reports, and not before its
// period has passed. The test waits for the report itself, however long a
// loaded machine takes to deliver it.
func TestRealClock(t *testing.T) {
	t.Parallel()
	const every = time.Millisecond
	waited := make(chan time.Duration, 1)
	d := Start(every, func(w time.Duration) {
		select {
		case waited <- w:
		default: // a later report; the first is the one checked
		}
	})
	w := <-waited
	total := d.Stop()
	assert.GreaterOrEqual(t, w, every, "the first report comes a period in")
	assert.GreaterOrEqual(t, total, w)
}
