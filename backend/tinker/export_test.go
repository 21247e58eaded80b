package tinker

import (
	"context"
	"time"
)

// FakeClock makes o's client wait on now and sleep instead of real time:
// sleep should return at once (a test records the pauses asked for).
func FakeClock(o *Options, now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) {
	o.clock = &clock{now: now, sleep: sleep}
}

// BillingPauses returns how many 402 pauses c took.
func BillingPauses(c *Client) int64 {
	c.pauses.mu.Lock()
	defer c.pauses.mu.Unlock()
	return c.pauses.billingPaused
}
