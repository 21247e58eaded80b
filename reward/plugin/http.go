package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// HTTPConfig configures an HTTP plugin. Zero values mean defaults.
type HTTPConfig struct {
	// URL receives one POST per request. Required; http or https.
	URL string
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration
	// MaxInFlight bounds concurrent requests (default 16).
	MaxInFlight int
	// Client is the HTTP client (default: a client with no overall timeout;
	// Timeout above applies per request).
	Client *http.Client
}

// Validate checks the config.
func (c HTTPConfig) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("plugin: URL %q must be an absolute http or https URL", c.URL)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("plugin: Timeout %v must not be negative", c.Timeout)
	}
	if c.MaxInFlight < 0 {
		return fmt.Errorf("plugin: MaxInFlight %d must not be negative", c.MaxInFlight)
	}
	return nil
}

// HTTP is a reward plugin behind an HTTP endpoint. It is safe for concurrent use.
type HTTP struct {
	cfg    HTTPConfig
	sem    chan struct{}
	nextID atomic.Uint64
}

// NewHTTP validates cfg and returns a plugin.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 16
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	return &HTTP{cfg: cfg, sem: make(chan struct{}, cfg.MaxInFlight)}, nil
}

// maxAnswer bounds an answer body.
const maxAnswer = 1 << 20

// Score posts req and returns the reward.
func (h *HTTP) Score(ctx context.Context, req Request) (float64, error) {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
	defer func() { <-h.sem }()
	req.ID = h.nextID.Add(1)
	fail := func(kind Kind, format string, args ...any) error {
		return &Error{Plugin: h.cfg.URL, ID: req.ID, Kind: kind, Msg: fmt.Sprintf(format, args...)}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(rctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := h.cfg.Client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return 0, context.Cause(ctx)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fail(KindTimeout, "no answer within %v", h.cfg.Timeout)
		}
		return 0, fail(KindCrash, "%v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fail(KindTimeout, "no answer within %v", h.cfg.Timeout)
		}
		return 0, fail(KindCrash, "read answer: %v", err)
	}
	if len(b) > maxAnswer {
		return 0, fail(KindGarbage, "answer is larger than %d bytes", maxAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fail(KindRemote, "HTTP %d: %s", resp.StatusCode, clip(bytes.TrimSpace(b)))
	}
	id, reward, remote, err := decodeAnswer(b)
	switch {
	case err != nil:
		return 0, fail(KindGarbage, "%v", err)
	case id != nil && *id != req.ID:
		return 0, fail(KindGarbage, "answer carries id %d", *id)
	case remote != "":
		return 0, fail(KindRemote, "%s", remote)
	}
	return reward, nil
}
