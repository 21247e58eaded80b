package tinker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tandemrl/tandem/wire"
)

// StatusError is a non-2xx answer. Message, Category and Field come from
// the body when it is an error object; otherwise Message is the raw body.
type StatusError struct {
	Method, Path string
	Status       int
	Message      string
	Category     string
	Field        string
	retryAfter   time.Duration
	shouldRetry  string // X-Should-Retry: "true", "false" or ""
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("tinker: %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// Retryable reports whether the SDK would retry this answer: the server's
// X-Should-Retry when given, else 408, 409, 429 and 5xx
// (_base_client.py _should_retry).
func (e *StatusError) Retryable() bool {
	switch e.shouldRetry {
	case "true":
		return true
	case "false":
		return false
	}
	return retryableStatus(e.Status)
}

func retryableStatus(s int) bool {
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// ConnError is a request that got no HTTP answer (refused, reset, timed out).
type ConnError struct {
	Method, Path string
	Err          error
}

func (e *ConnError) Error() string { return fmt.Sprintf("tinker: %s %s: %v", e.Method, e.Path, e.Err) }
func (e *ConnError) Unwrap() error { return e.Err }

// RequestFailedError is a call whose future resolved to {error, category}.
type RequestFailedError struct {
	RequestID string
	Message   string
	Category  string // user, server or unknown
}

func (e *RequestFailedError) Error() string {
	return fmt.Sprintf("tinker: request %s failed (%s error): %s", e.RequestID, e.Category, e.Message)
}

// ErrFutureExpired reports a future the server no longer holds (410).
var ErrFutureExpired = errors.New("tinker: future expired on the server")

func newIdemKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "tandem-" + hex.EncodeToString(b[:])
}

// hintedBackOff is exponential backoff that obeys a server's Retry-After
// when it is reasonable (0 < d ≤ 60 s), as the SDK does.
type hintedBackOff struct {
	backoff.BackOff
	hint time.Duration
}

func (h *hintedBackOff) NextBackOff() time.Duration {
	next := h.BackOff.NextBackOff()
	if next == backoff.Stop {
		return next
	}
	if h.hint > 0 {
		next, h.hint = h.hint, 0
	}
	return next
}

func (c *Client) newBackOff(ctx context.Context) *hintedBackOff {
	eb := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(c.opts.RetryInitial),
		backoff.WithMaxInterval(c.opts.RetryMax),
		backoff.WithMaxElapsedTime(c.opts.RetryMaxElapsed),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.25),
	)
	return &hintedBackOff{BackOff: backoff.WithContext(eb, ctx)}
}

// request is one API call to send.
type request struct {
	method      string
	path        string // after the base URL, e.g. "/api/v1/optim_step"
	body        []byte
	contentType string // of body; default application/json
	accept      string // default application/json
	idemKey     string
	headers     map[string]string
	timeout     time.Duration
	// backpressure: a 429 is not retried but returned (asample).
	backpressure bool
}

// answer is the body of a 2xx answer and whether its Content-Type says
// protobuf (anything else is read as JSON).
type answer struct {
	body  []byte
	proto bool
}

const (
	contentTypeJSON = "application/json"
	// acceptProto is the Accept of a poll whose result may come in
	// protobuf: protobuf preferred, JSON taken (errors and try_again are
	// always JSON, and a server may answer JSON anyway).
	acceptProto = wire.ContentTypeProto + ", " + contentTypeJSON
)

func isProto(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == wire.ContentTypeProto
}

// do sends r once and returns a 2xx answer, a *StatusError or a
// *ConnError.
func (c *Client) do(ctx context.Context, r request) (answer, error) {
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.opts.BaseURL+r.path, body)
	if err != nil {
		return answer{}, fmt.Errorf("tinker: build request: %w", err)
	}
	for k, v := range c.opts.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-API-Key", c.opts.APIKey)
	accept := r.accept
	if accept == "" {
		accept = contentTypeJSON
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "tandem-tinker/"+SDKVersion)
	if r.body != nil {
		ct := r.contentType
		if ct == "" {
			ct = contentTypeJSON
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.idemKey != "" {
		req.Header.Set("X-Idempotency-Key", r.idemKey)
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return answer{}, &ConnError{Method: r.method, Path: r.path, Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return answer{}, &ConnError{Method: r.method, Path: r.path, Err: err}
	}
	if resp.StatusCode/100 == 2 {
		return answer{body: b, proto: isProto(resp.Header.Get("Content-Type"))}, nil
	}
	se := &StatusError{Method: r.method, Path: r.path, Status: resp.StatusCode, Message: string(b), shouldRetry: resp.Header.Get("X-Should-Retry")}
	var er wire.ErrorResponse
	if json.Unmarshal(b, &er) == nil && er.Error != "" {
		se.Message, se.Category, se.Field = er.Error, er.Category, er.Field
	}
	if s, err := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); err == nil && s > 0 && s <= 60 {
		se.retryAfter = time.Duration(s * float64(time.Second))
	}
	return answer{}, se
}

// maxAnswer bounds the answer body a client reads.
const maxAnswer = 1 << 30

// send does r with the SDK's retries: connection errors and retryable
// statuses are retried with exponential backoff until RetryMaxElapsed, a
// bare 400 with an empty body (a proxy's, which the SDK treats as a lost
// connection) up to maxEmptyBadRequests times, and a 402 is waited out
// while the billing window lasts (see pauseOnBilling); the idempotency key
// stays the same across attempts. With r.backpressure a 429 is returned at
// once, for the caller to pause (asample, as the SDK does).
func (c *Client) send(ctx context.Context, r request) ([]byte, error) {
	bo := c.newBackOff(ctx)
	emptyBad := 0
	return backoff.RetryWithData(func() ([]byte, error) {
		for {
			a, err := c.do(ctx, r)
			if err == nil {
				return a.body, nil
			}
			if ctx.Err() != nil {
				return nil, backoff.Permanent(err)
			}
			again, perr := c.pauseOnBilling(ctx, err)
			if perr != nil {
				return nil, backoff.Permanent(perr)
			}
			if again {
				continue
			}
			var se *StatusError
			if errors.As(err, &se) {
				switch {
				case se.Status == http.StatusBadRequest && se.Message == "" && emptyBad < maxEmptyBadRequests:
					emptyBad++
				case se.Status == http.StatusTooManyRequests && r.backpressure:
					return nil, backoff.Permanent(err)
				case !se.Retryable():
					return nil, backoff.Permanent(err)
				}
				bo.hint = se.retryAfter
			}
			c.retries.Add(1)
			return nil, err
		}
	}, bo)
}

// maxEmptyBadRequests bounds the retries of a call answered by a 400 with
// an empty body (MAX_CONNECTION_ERROR_RETRIES).
const maxEmptyBadRequests = 16

// protoRequest is a forward_backward request to send in protobuf.
type protoRequest wire.ForwardBackwardRequest

// encode makes the POST request of path carrying v: in protobuf if it is
// a protoRequest, else in JSON, with a fresh idempotency key.
func encode(path string, v any, headers map[string]string) (request, error) {
	var (
		body []byte
		ct   = contentTypeJSON
		err  error
	)
	if p, ok := v.(protoRequest); ok {
		body, err = wire.ForwardBackwardRequest(p).MarshalProto()
		ct = wire.ContentTypeProto
	} else {
		body, err = json.Marshal(v)
	}
	if err != nil {
		return request{}, fmt.Errorf("tinker: encode %s: %w", path, err)
	}
	return request{method: http.MethodPost, path: path, body: body, contentType: ct, idemKey: newIdemKey(), headers: headers}, nil
}

// postJSON encodes v (see encode) and sends it with retries.
func (c *Client) postJSON(ctx context.Context, path string, v any, headers map[string]string) ([]byte, error) {
	r, err := encode(path, v, headers)
	if err != nil {
		return nil, err
	}
	return c.send(ctx, r)
}

// submit posts a call answered with a future and returns its request id.
func (c *Client) submit(ctx context.Context, endpoint string, v any, headers map[string]string) (string, error) {
	r, err := encode("/api/v1/"+endpoint, v, headers)
	if err != nil {
		return "", err
	}
	return c.submitRequest(ctx, endpoint, r)
}

func (c *Client) submitRequest(ctx context.Context, endpoint string, r request) (string, error) {
	b, err := c.send(ctx, r)
	if err != nil {
		return "", err
	}
	f, err := wire.DecodeUntypedAPIFuture(b)
	if err != nil {
		return "", fmt.Errorf("tinker: %s answer: %w", endpoint, err)
	}
	return f.RequestID, nil
}

// poll waits for the result of request id, a call whose result is JSON
// only (see pollAny).
func (c *Client) poll(ctx context.Context, id string) ([]byte, error) {
	a, err := c.pollAccept(ctx, id, contentTypeJSON)
	if err == nil && a.proto {
		return nil, fmt.Errorf("tinker: retrieve_future %s: a protobuf answer, which was not asked for", id)
	}
	return a.body, err
}

// pollAny waits for the result of request id, a sample or a forward or
// forward_backward: in ModeProto it asks for protobuf as SDK v0.25.0 does,
// and the answer says by its Content-Type which it is.
func (c *Client) pollAny(ctx context.Context, id string) (answer, error) {
	accept := contentTypeJSON
	if c.mode == ModeProto {
		accept = acceptProto
	}
	return c.pollAccept(ctx, id, accept)
}

// pollAccept waits for request id's result with SDK v0.25.0's table
// (lib/api_future_impl.py): try_again and 408 poll again at once; 5xx
// polls again after RetryInitial (the SDK repeats at once; the pause
// spares a failing server); a connection error or a 429 after
// min(2^n, 30) s, n counting them in a row; a bare 400 polls again up to
// 3 times (a proxy may inject one); a 402 waits 5 s while the billing
// window lasts; 410 is ErrFutureExpired (a sample is then sent again, a
// training call is not); any other status is an error. The result is the
// raw answer: protobuf bytes when its Content-Type says so (never an error
// nor try_again, which are JSON), else the JSON of the call's result.
func (c *Client) pollAccept(ctx context.Context, id, accept string) (answer, error) {
	body, _ := json.Marshal(wire.FutureRetrieveRequest{RequestID: id})
	backoffs, badRequests := 0, 0
	for {
		a, err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/retrieve_future", body: body, accept: accept, timeout: c.opts.PollTimeout})
		if ctx.Err() != nil {
			return answer{}, context.Cause(ctx)
		}
		var se *StatusError
		var ce *ConnError
		switch {
		case errors.As(err, &se):
			again, perr := c.pauseOnBilling(ctx, err)
			if perr != nil {
				return answer{}, perr
			}
			if again {
				continue
			}
			if se.Status != http.StatusTooManyRequests {
				backoffs = 0 // any other answer proves the connection alive
			}
			switch {
			case se.Status == http.StatusRequestTimeout:
				badRequests = 0
				continue
			case se.Status == http.StatusGone:
				return answer{}, fmt.Errorf("%w: request %s: %s", ErrFutureExpired, id, se.Message)
			case se.Status >= 500:
				if err := c.clock.sleep(ctx, c.opts.RetryInitial); err != nil {
					return answer{}, err
				}
				continue
			case se.Status == http.StatusTooManyRequests:
				if err := c.clock.sleep(ctx, pollBackoff(backoffs)); err != nil {
					return answer{}, err
				}
				backoffs++
				continue
			case se.Status == http.StatusBadRequest && badRequests < maxBadRequestPolls:
				badRequests++
				continue
			}
			return answer{}, err
		case errors.As(err, &ce):
			if err := c.clock.sleep(ctx, pollBackoff(backoffs)); err != nil {
				return answer{}, err
			}
			backoffs++
			continue
		case err != nil:
			return answer{}, err
		}
		backoffs = 0
		if a.proto {
			return a, nil
		}
		r, err := wire.DecodeFutureResult(a.body)
		if err != nil {
			return answer{}, fmt.Errorf("tinker: retrieve_future %s: %w", id, err)
		}
		switch {
		case r.TryAgain != nil:
			if err := c.clock.sleep(ctx, c.opts.PollInterval); err != nil {
				return answer{}, err
			}
		case r.Failed != nil:
			return answer{}, &RequestFailedError{RequestID: id, Message: r.Failed.Error, Category: r.Failed.Category}
		default:
			return answer{body: r.Result}, nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
