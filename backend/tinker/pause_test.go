package tinker_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// fakeClock is time that moves only when the client sleeps; it records
// the pauses of a second or more (shorter ones are the test options'
// RetryInitial and PollInterval).
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	pauses []time.Duration
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
	if d >= time.Second {
		f.pauses = append(f.pauses, d)
	}
	return ctx.Err()
}

// take returns the pauses recorded since the last take.
func (f *fakeClock) take() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pauses
	f.pauses = nil
	return p
}

func faults(f string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// TestPollRetryTable drives retrieve_future through SDK v0.25.0's table
// (lib/api_future_impl.py) and checks what the client waited each time.
func TestPollRetryTable(t *testing.T) {
	t.Parallel()
	s := time.Second
	for _, c := range []struct {
		name   string
		plan   []string
		ok     bool
		pauses []time.Duration
		status int // of the error when !ok
	}{
		{"429 backs off 1, 2, 4 s", faults(fault429, 3), true, []time.Duration{s, 2 * s, 4 * s}, 0},
		{"429 backs off to 30 s at most", faults(fault429, 7), true, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s}, 0},
		{"a dropped connection and a 429 share the count", []string{faultResetBefore, fault429, fault429}, true, []time.Duration{s, 2 * s, 4 * s}, 0},
		{"any other answer resets the count", []string{fault429, fault429, fault503, fault429}, true, []time.Duration{s, 2 * s, s}, 0},
		{"408 and 5xx poll again without a long pause", []string{fault408, fault503, fault408}, true, nil, 0},
		{"a bare 400 is polled again up to 3 times", faults(fault400, 3), true, nil, 0},
		{"a fourth 400 in a row is an error", faults(fault400, 4), false, nil, http.StatusBadRequest},
		{"a 408 renews the 400 budget", []string{fault400, fault400, fault400, fault408, fault400, fault400, fault400}, true, nil, 0},
		{"402 pauses 5 s each", faults(fault402, 3), true, []time.Duration{5 * s, 5 * s, 5 * s}, 0},
		{"other 4xx are errors", []string{"404"}, false, nil, http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := &fakeClock{t: time.Unix(1e9, 0)}
			f := newFlaky(map[string][]string{})
			e := newEnv(t, f.wrap, func(o *tinker.Options) { tinker.FakeClock(o, clk.now, clk.sleep) })
			ctx := context.Background()
			tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
			require.NoError(t, err)
			clk.take()
			f.mu.Lock()
			f.plan["retrieve_future"] = c.plan
			f.mu.Unlock()
			_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
			if c.ok {
				require.NoError(t, err)
			} else {
				var se *tinker.StatusError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, c.status, se.Status)
			}
			assert.Equal(t, c.pauses, clk.take())
			assert.Equal(t, 1, f.count("optim_step"), "polling never resends the call")
		})
	}
}

// A 402 is waited out while the billing window lasts (the server's
// billing_exception_max_pause_duration_sec, 3600 s) and is an error after.
func TestBillingWindow(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	f := newFlaky(map[string][]string{})
	e := newEnv(t, f.wrap, func(o *tinker.Options) { tinker.FakeClock(o, clk.now, clk.sleep) })
	cfg, ok := e.c.ServerConfig()
	require.True(t, ok)
	window := time.Duration(cfg.BillingExceptionMaxPauseDurationSec) * time.Second
	require.Equal(t, time.Hour, window)
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)

	// Submission: a 402 on optim_step pauses, then the call goes through once.
	f.mu.Lock()
	f.plan["optim_step"] = faults(fault402, 2)
	f.mu.Unlock()
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Second}, clk.take())
	assert.Equal(t, policy.Version(1), tr.Version())

	// Polling: 402s for longer than the window end in an error. The
	// incident began with the submission's 402s 10 s ago, so the window
	// closes 10 s early.
	n := int(window/(5*time.Second)) + 5
	f.mu.Lock()
	f.plan["retrieve_future"] = faults(fault402, n)
	f.mu.Unlock()
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	var se *tinker.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusPaymentRequired, se.Status)
	assert.Len(t, clk.take(), int(window/(5*time.Second))-2+1)
	f.mu.Lock()
	f.plan["retrieve_future"] = nil
	f.mu.Unlock()

	// Five quiet minutes later a 402 opens a new incident and is waited out again.
	clk.mu.Lock()
	clk.t = clk.t.Add(6 * time.Minute)
	clk.mu.Unlock()
	f.mu.Lock()
	f.plan["optim_step"] = []string{fault402}
	f.mu.Unlock()
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{5 * time.Second}, clk.take())
}

// A 429 on asample (sent with X-Tinker-Sampling-Backpressure) makes the
// client's samples wait 1 s, then the same sample is sent again; a bare
// 400 with no body on any submission is retried as a lost connection.
func TestSampleBackpressureAndBareBadRequest(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	f := newFlaky(map[string][]string{"asample": {fault429, fault429}, "optim_step": {fault400Empty, fault400Empty}})
	e := newEnv(t, f.wrap, func(o *tinker.Options) { tinker.FakeClock(o, clk.now, clk.sleep) })
	ctx := context.Background()
	out, err := e.c.NewSampler(base).Sample(ctx, rl.Tokens([]int{1, 2}), 1, rl.SamplingParams{MaxTokens: 1})
	require.NoError(t, err)
	assert.Len(t, out.Sequences, 1)
	assert.Equal(t, 3, f.count("asample"))
	assert.Equal(t, []time.Duration{time.Second, time.Second}, clk.take())

	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err, "an empty 400 is a proxy's: retried")
	assert.Equal(t, 3, f.count("optim_step"))
	assert.Equal(t, policy.Version(1), tr.Version(), "applied once")
}
