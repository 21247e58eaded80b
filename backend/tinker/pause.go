package tinker

import (
	"context"
	"sync"
	"time"
)

// Pauses of SDK v0.25.0 (lib/internal_client_holder.py,
// lib/public_interfaces/sampling_client.py).
const (
	// billingPause is the wait after a 402 while the billing window lasts.
	billingPause = 5 * time.Second
	// billingReset: a 402 this long after the previous one starts a new
	// incident (BILLING_EXCEPTION_RESET_DURATION_SEC).
	billingReset = 5 * time.Minute
	// sampleBackoffSmall and sampleBackoffLarge are how long every sample
	// of the client waits after a 429 on asample, for prompts of at most
	// sampleBackoffBytes estimated bytes and for larger ones.
	sampleBackoffSmall = time.Second
	sampleBackoffLarge = 5 * time.Second
	sampleBackoffBytes = 128 << 10
	// maxBadRequestPolls is how often a poll answered by a bare 400 (which
	// an upstream proxy may inject) is repeated before it is an error.
	maxBadRequestPolls = 3
	// maxPollBackoff caps the exponential pause of a poll after a
	// connection error or a 429.
	maxPollBackoff = 30 * time.Second
)

// clock is the time the client waits on; tests replace it.
type clock struct {
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

var realClock = clock{now: time.Now, sleep: sleep}

// pauses is the client-wide state behind the SDK's pauses: the billing
// window opened by 402 answers and the sampling backoff opened by a 429
// on asample. Safe for concurrent use.
type pauses struct {
	mu            sync.Mutex
	billingFirst  time.Time // first 402 of the incident; zero when none
	billingLast   time.Time // latest 402
	sampleUntil   time.Time // samples wait until then
	billingPaused int64     // 402 pauses taken, for tests and metrics
}

// onBilling records a 402 at now and reports whether the call should
// pause and retry: true while the incident is younger than maxPause (the
// server's billing_exception_max_pause_duration_sec), false after, when
// the 402 is an error.
func (p *pauses) onBilling(now time.Time, maxPause time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.billingLast.IsZero() && now.Sub(p.billingLast) > billingReset {
		p.billingFirst = time.Time{}
	}
	if !p.billingFirst.IsZero() && now.Sub(p.billingFirst) > maxPause {
		return false
	}
	if p.billingFirst.IsZero() {
		p.billingFirst = now
	}
	p.billingLast = now
	p.billingPaused++
	return true
}

// backOffSamples makes every sample of the client wait until now+d.
func (p *pauses) backOffSamples(now time.Time, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := now.Add(d); t.After(p.sampleUntil) {
		p.sampleUntil = t
	}
}

// sampleWait is how long a sample must still wait at now.
func (p *pauses) sampleWait(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sampleUntil.Sub(now)
}

// billingMaxPause is how long 402 answers are waited out.
func (c *Client) billingMaxPause() time.Duration {
	s := c.config.BillingExceptionMaxPauseDurationSec
	if s <= 0 {
		s = 3600
	}
	return time.Duration(s) * time.Second
}

// pauseOnBilling waits out a 402 when the billing window allows it and
// reports whether the call should be tried again.
func (c *Client) pauseOnBilling(ctx context.Context, err error) (bool, error) {
	se, ok := err.(*StatusError)
	if !ok || se.Status != 402 || !c.pauses.onBilling(c.clock.now(), c.billingMaxPause()) {
		return false, nil
	}
	if err := c.clock.sleep(ctx, billingPause); err != nil {
		return false, err
	}
	return true, nil
}

// pollBackoff is min(2^n s, 30 s), the SDK's pause of a poll after its
// n-th consecutive connection error or 429.
func pollBackoff(n int) time.Duration {
	if n >= 5 {
		return maxPollBackoff
	}
	return min(time.Duration(1<<n)*time.Second, maxPollBackoff)
}
