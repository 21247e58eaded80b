package resilient

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// Sampler is an rl.Sampler over a Tinker-compatible server that survives
// the server being restarted: when a call fails because the server lost
// its session (or cannot be reached), it opens a new session, reloads the
// adapter it served and retries the call. Sampling changes no state, so a
// retry is always safe. Safe for concurrent use: calls run in parallel;
// one of them reopens the session while the others wait for it.
type Sampler struct {
	opts Options
	turn chan struct{} // held while the session is replaced

	mu     sync.Mutex
	gen    int // bumped on every new session
	client *tinker.Client
	s      *tinker.Sampler
	ref    *policy.Ref

	recoveries atomic.Int64
}

var _ rl.Sampler = (*Sampler)(nil)

// NewSampler opens a session and returns a Sampler of opts.Base.
func NewSampler(ctx context.Context, opts Options) (*Sampler, error) {
	s := &Sampler{opts: opts.withDefaults(), turn: make(chan struct{}, 1)}
	c, err := tinker.New(ctx, s.opts.Client)
	if err != nil {
		return nil, err
	}
	s.client, s.s = c, c.NewSampler(s.opts.Base)
	return s, nil
}

// Recoveries returns how many times the Sampler reopened its session.
func (s *Sampler) Recoveries() int { return int(s.recoveries.Load()) }

// Close closes the session.
func (s *Sampler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client.Close()
}

// current returns the sampler of the current session, the session's
// generation and its id.
func (s *Sampler) current() (*tinker.Sampler, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s, s.gen, s.client.SessionID()
}

func (s *Sampler) generation() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Sample implements rl.Sampler.
func (s *Sampler) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	for {
		smp, gen, session := s.current()
		out, err := smp.Sample(ctx, prompt, n, p)
		if err == nil || ctx.Err() != nil {
			return out, err
		}
		if s.generation() != gen {
			continue // failed because its session was replaced: retry on the new one
		}
		if !s.lost(ctx, session, err) {
			return out, err
		}
		if rerr := s.reopen(ctx, gen, err); rerr != nil {
			return out, fmt.Errorf("%w (recovery failed: %v)", err, rerr)
		}
	}
}

// Load implements rl.Sampler.
func (s *Sampler) Load(ctx context.Context, ref policy.Ref) error {
	for {
		smp, gen, session := s.current()
		err := smp.Load(ctx, ref)
		s.mu.Lock()
		replaced := s.gen != gen
		if err == nil && !replaced {
			s.ref = &ref
		}
		s.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case replaced:
			continue // the session was replaced meanwhile: load on the new one
		case err == nil:
			return nil
		case !s.lost(ctx, session, err):
			return err
		}
		if rerr := s.reopen(ctx, gen, err); rerr != nil {
			return fmt.Errorf("%w (recovery failed: %v)", err, rerr)
		}
	}
}

// lost reports whether err, met by a call on session, means that session
// is gone: a connection error, an expired future, or a 404 while the
// server no longer knows the session (a 404 for a live session is about
// the call, e.g. an unknown checkpoint). It probes the call's own session,
// not the current one: another call may have replaced it meanwhile.
func (s *Sampler) lost(ctx context.Context, session string, err error) bool {
	if !Recoverable(err) {
		return false
	}
	if !isNotFound(err) {
		return true
	}
	return !known(ctx, s.opts.Client, "session_heartbeat", map[string]string{"session_id": session, "type": "session_heartbeat"})
}

// reopen replaces session gen (unless another call already did) with a new
// one serving the same adapter, retrying until RecoverFor has passed.
func (s *Sampler) reopen(ctx context.Context, gen int, cause error) error {
	select {
	case s.turn <- struct{}{}:
		defer func() { <-s.turn }()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	s.mu.Lock()
	if s.gen != gen {
		s.mu.Unlock()
		return nil
	}
	old, ref := s.client, s.ref
	s.mu.Unlock()
	s.recoveries.Add(1)
	s.opts.Logger.Info("resilient: sampler lost its session; recovering", "err", cause)
	old.Close()
	deadline := time.Now().Add(s.opts.RecoverFor)
	for {
		c, smp, err := s.open(ctx, ref)
		if err == nil {
			s.mu.Lock()
			s.client, s.s = c, smp
			s.gen++
			s.mu.Unlock()
			return nil
		}
		if !Recoverable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(retryPause):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (s *Sampler) open(ctx context.Context, ref *policy.Ref) (*tinker.Client, *tinker.Sampler, error) {
	c, err := tinker.New(ctx, s.opts.Client)
	if err != nil {
		return nil, nil, err
	}
	smp := c.NewSampler(s.opts.Base)
	if ref != nil {
		if err := smp.Load(ctx, *ref); err != nil {
			c.Close()
			return nil, nil, err
		}
	}
	return c, smp, nil
}
