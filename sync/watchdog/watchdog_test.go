package watchdog

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestReportsUntilStopped(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	var last atomic.Int64
	d := Start(2*time.Millisecond, func(w time.Duration) { n.Add(1); last.Store(int64(w)) })
	assert.Eventually(t, func() bool { return n.Load() >= 3 }, time.Second, time.Millisecond)
	waited := d.Stop()
	after := n.Load()
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, after, n.Load(), "no report after Stop")
	assert.GreaterOrEqual(t, waited, time.Duration(last.Load()))
	assert.GreaterOrEqual(t, time.Duration(last.Load()), 6*time.Millisecond, "third report after three periods")
	d.Stop()
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	d := Start(0, func(time.Duration) { t.Error("disabled dog reported") })
	time.Sleep(time.Millisecond)
	d.Stop()
}
