package samplerpool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// Defaults applied by Config's zero fields.
const (
	DefaultMaxFailures     = 3
	DefaultRetries         = 2
	DefaultLoadConcurrency = 8
	DefaultHealthTimeout   = 10 * time.Second
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoReplica: every replica is ejected (or none is left that this
	// call has not failed on). It wraps rl.ErrTransient, so a caller that
	// retries transient errors waits for a re-admission.
	ErrNoReplica = fmt.Errorf("samplerpool: no healthy replica: %w", rl.ErrTransient)
	// ErrRunning: Run or Start was called while the health loop runs.
	ErrRunning = errors.New("samplerpool: health loop already running")
	// ErrClosed is the cause the health loop's context is cancelled with
	// by Close.
	ErrClosed = errors.New("samplerpool: closed")
)

// Replica is one sampler of the pool and the name it is reported under.
type Replica struct {
	Name    string
	Sampler rl.Sampler
}

// HealthChecker is the optional method a replica's sampler may implement
// for the health loop's probe (an HTTP /health, say). Without it the probe
// is a one-token Sample of Config.ProbePrompt.
type HealthChecker interface {
	Health(ctx context.Context) error
}

// Clock is the health loop's time source. Tests inject a fake one and
// advance it; the default is the wall clock.
type Clock interface {
	Now() time.Time
	// At returns a channel that receives once the clock reaches t
	// (at once when t has passed).
	At(t time.Time) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                  { return time.Now() }
func (wallClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// Config sets a Pool's rules. The zero value means the documented
// defaults; New calls Validate. The function fields are not serialized.
type Config struct {
	// MaxFailures is the number of consecutive transient failures that
	// eject a replica (0 = DefaultMaxFailures).
	MaxFailures int `json:"max_failures,omitempty"`
	// Retries bounds how often one Sample moves to another replica after a
	// transient failure (0 = DefaultRetries, negative = never).
	Retries int `json:"retries,omitempty"`
	// MaxOutstanding caps the calls in flight on one replica (0 = no cap).
	// When every routable replica is at the cap, Sample waits for a slot,
	// honouring its context.
	MaxOutstanding int `json:"max_outstanding,omitempty"`
	// LoadConcurrency bounds the concurrent Load calls of one fan-out
	// (0 = DefaultLoadConcurrency).
	LoadConcurrency int `json:"load_concurrency,omitempty"`
	// HealthTimeout bounds one probe or re-load of the health loop
	// (0 = DefaultHealthTimeout).
	HealthTimeout time.Duration `json:"health_timeout,omitempty"`
	// ProbePrompt is the prompt of the Sample probe used for replicas
	// without a Health method (empty = one token, id 0).
	ProbePrompt rl.ModelInput `json:"probe_prompt,omitzero"`

	// Backoff makes the probe and re-load schedule of one replica; it is
	// Reset when the replica is ejected or its Load fails (nil =
	// DefaultBackoff). A schedule that returns backoff.Stop leaves the
	// replica ejected (or stale) for good.
	Backoff func() backoff.BackOff `json:"-"`
	// Clock is the health loop's time (nil = the wall clock).
	Clock Clock `json:"-"`
	// IsTransient classifies a failed call (nil = IsTransient). It is
	// asked only when the caller's context is still live.
	IsTransient func(error) bool `json:"-"`
	// OnEvent, if set, is told of ejections, re-admissions, failed probes
	// and loads. It is called synchronously, outside the pool's lock, and
	// must not block.
	OnEvent func(Event) `json:"-"`
}

// DefaultBackoff is exponential from 100 ms to 10 s with 50% jitter and
// no limit on the total time.
func DefaultBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 10 * time.Second
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}

// Validate reports a field out of range.
func (c Config) Validate() error {
	switch {
	case c.MaxFailures < 0:
		return fmt.Errorf("samplerpool: MaxFailures %d is negative; want ≥ 1, or 0 for %d", c.MaxFailures, DefaultMaxFailures)
	case c.MaxOutstanding < 0:
		return fmt.Errorf("samplerpool: MaxOutstanding %d is negative; want ≥ 1, or 0 for no cap", c.MaxOutstanding)
	case c.LoadConcurrency < 0:
		return fmt.Errorf("samplerpool: LoadConcurrency %d is negative; want ≥ 1, or 0 for %d", c.LoadConcurrency, DefaultLoadConcurrency)
	case c.HealthTimeout < 0:
		return fmt.Errorf("samplerpool: HealthTimeout %v is negative", c.HealthTimeout)
	}
	return nil
}

// withDefaults returns c with every zero field set.
func (c Config) withDefaults() Config {
	if c.MaxFailures == 0 {
		c.MaxFailures = DefaultMaxFailures
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	} else if c.Retries < 0 {
		c.Retries = 0
	}
	if c.LoadConcurrency == 0 {
		c.LoadConcurrency = DefaultLoadConcurrency
	}
	if c.HealthTimeout == 0 {
		c.HealthTimeout = DefaultHealthTimeout
	}
	if len(c.ProbePrompt.Chunks) == 0 {
		c.ProbePrompt = rl.Tokens([]int{0})
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.Clock == nil {
		c.Clock = wallClock{}
	}
	if c.IsTransient == nil {
		c.IsTransient = IsTransient
	}
	return c
}

// IsTransient is the default failure classification: rl.IsTransient, an
// error with a Retryable() method that returns true (backend/openai's
// *StatusError for 408, 429, 5xx), a connection-level error (any net.Error,
// which backend/openai's *ConnError wraps; refused or reset connections; a
// cut-off body), or a per-request deadline. The caller's own cancellation
// is sorted out before this is asked.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if rl.IsTransient(err) {
		return true
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) && r.Retryable() {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// EventKind says what an Event reports.
type EventKind int

const (
	EventEjected     EventKind = iota + 1 // a replica reached MaxFailures
	EventProbeFailed                      // a probe (or the re-load after it) failed
	EventReadmitted                       // a probe and re-load succeeded
	EventLoadFailed                       // a Load of the fan-out or a re-load failed
	EventLoaded                           // a Load of the fan-out or a re-load succeeded
)

func (k EventKind) String() string {
	switch k {
	case EventEjected:
		return "ejected"
	case EventProbeFailed:
		return "probe-failed"
	case EventReadmitted:
		return "readmitted"
	case EventLoadFailed:
		return "load-failed"
	case EventLoaded:
		return "loaded"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one change of a replica's health, for logs and tests.
type Event struct {
	Kind    EventKind
	Replica string
	// Version is the ref's version for load and re-admission events.
	Version policy.Version
	// Err is the failure, for EventProbeFailed and EventLoadFailed.
	Err error
}
