package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// maxAnswer bounds the body read from the server (64 MiB: n samples of
// long completions with log-probs fit many times over).
const maxAnswer = 64 << 20

// transport sends JSON requests to one server with timeouts and retries.
// Safe for concurrent use.
type transport struct {
	opts    Options
	retries atomic.Int64 // attempts retried, for Stats
}

// call is one request to send.
type call struct {
	method  string
	path    string
	body    any           // encoded as JSON; nil: no body
	timeout time.Duration // per attempt
	// retry decides whether an attempt's error is retried; nil: the
	// sampling rule (connection errors and StatusError.Retryable).
	retry func(error) bool
	// accept, when set, decodes a 2xx body; its error is treated like an
	// attempt's (retried when retry says so, e.g. an aborted generation).
	accept func([]byte) error
}

// do sends c once and returns the body of a 2xx answer, a *StatusError or
// a *ConnError.
func (t *transport) do(ctx context.Context, c call) ([]byte, error) {
	var body io.Reader
	if c.body != nil {
		b, err := json.Marshal(c.body)
		if err != nil {
			return nil, fmt.Errorf("openai: encode %s: %w", c.path, err)
		}
		body = bytes.NewReader(b)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout,
			fmt.Errorf("openai: %s %s: no answer within %v (Options.RequestTimeout/AdminTimeout): %w",
				c.method, c.path, c.timeout, context.DeadlineExceeded))
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, c.method, t.opts.BaseURL+c.path, body)
	if err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "tandem-openai")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.opts.APIKey)
	}
	resp, err := t.opts.HTTPClient.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause
		}
		return nil, &ConnError{Method: c.method, Path: c.path, Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause
		}
		return nil, &ConnError{Method: c.method, Path: c.path, Err: err}
	}
	if resp.StatusCode/100 == 2 {
		return b, nil
	}
	return nil, newStatusError(c.method, c.path, resp.StatusCode, b)
}

// retrySample is the rule of sampling requests: connection errors
// (including per-attempt timeouts) and 408, 429, 500, 502, 503, 504.
func retrySample(err error) bool {
	var ce *ConnError
	if errors.As(err, &ce) {
		return true
	}
	var se *StatusError
	return errors.As(err, &se) && se.Retryable()
}

// retryAdmin is the rule of adapter loads and other admin calls:
// connection errors, 408, 429, 502, 503 and 504 — not 500, which vLLM
// answers for permanent load failures (rank, modules, bad tensors).
func retryAdmin(err error) bool {
	var ce *ConnError
	if errors.As(err, &ce) {
		return true
	}
	var se *StatusError
	return errors.As(err, &se) && se.Retryable() && se.Status != http.StatusInternalServerError
}

// noRetry is the rule of unloads: one attempt, bounded by AdminTimeout;
// they run on the goroutine of the Sample or Load that freed the version,
// and a failed one only leaves a name registered (Stats.UnloadErr).
func noRetry(error) bool { return false }

func (t *transport) backOff(ctx context.Context) backoff.BackOff {
	eb := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(t.opts.RetryInitial),
		backoff.WithMaxInterval(t.opts.RetryMax),
		backoff.WithMaxElapsedTime(t.opts.RetryMaxElapsed),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.25),
		backoff.WithClockProvider(t.opts.clock),
	)
	var b backoff.BackOff = eb
	if t.opts.MaxRetries > 0 {
		b = backoff.WithMaxRetries(b, uint64(t.opts.MaxRetries))
	} else {
		b = &backoff.StopBackOff{}
	}
	return backoff.WithContext(b, ctx)
}

// send does c with retries and returns the body of the 2xx answer. The
// caller's ctx ending stops the retries at once; the last attempt's error
// is returned.
func (t *transport) send(ctx context.Context, c call) ([]byte, error) {
	retry := c.retry
	if retry == nil {
		retry = retrySample
	}
	return backoff.RetryNotifyWithTimerAndData(func() ([]byte, error) {
		b, err := t.do(ctx, c)
		if err == nil && c.accept != nil {
			err = c.accept(b)
		}
		if err == nil {
			return b, nil
		}
		if ctx.Err() != nil || !retry(err) {
			return nil, backoff.Permanent(err)
		}
		return nil, err
	}, t.backOff(ctx), func(error, time.Duration) { t.retries.Add(1) }, t.opts.timer())
}

// sendJSON does c with retries and decodes the answer into out.
func (t *transport) sendJSON(ctx context.Context, c call, out any) error {
	b, err := t.send(ctx, c)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrMalformed, c.method, c.path, err)
	}
	return nil
}
