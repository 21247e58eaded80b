package servertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/server"
)

// What a Server accepts and serves.
const (
	// APIKey is the one API key a Server accepts.
	APIKey = "servertest-key-0123456789"
	// Base is the one base model a Server serves, of Vocab tokens.
	Base = "fake-base"
)

// Server is a tandem server over a Backend and a Store, on one httptest
// address, for tests of clients. A test can restart it (every session,
// model and future is lost, as when a process is killed and started
// again) and have it drop a number of requests unanswered, as a process
// that is not back yet. How long it is away is counted in requests, not
// timed, so a client sees the same outage on a fast machine and a loaded
// one. Its methods are safe for concurrent use; Restart, like t.FailNow,
// must be called from the test's goroutine.
type Server struct {
	// Backend and Store outlive restarts, as a checkpoint folder outlives
	// the process: a restarted server finds what the one before saved.
	// A test may set the Backend's hooks (Fail, Gate, …) before it calls.
	Backend *Backend
	Store   *Store
	// HTTP is the address the server listens on; it does not change.
	HTTP *httptest.Server

	t  testing.TB
	mu sync.Mutex
	// srv serves now; a restart replaces it.
	srv *server.Server
	// down is how many more requests are dropped, dropped how many were.
	down, dropped int
}

// NewServer starts a Server; the test's cleanup closes it. wrap, if not
// nil, is a middleware around the server (it may read, refuse, hold or
// alter requests), kept across restarts; dropped requests never reach it.
func NewServer(t testing.TB, wrap func(http.Handler) http.Handler) *Server {
	t.Helper()
	s := &Server{Backend: &Backend{}, Store: &Store{}, t: t}
	s.srv = s.newServer()
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.Current().ServeHTTP(w, r) })
	if wrap != nil {
		h = wrap(h)
	}
	s.HTTP = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.drop() {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		s.HTTP.Close()
		require.NoError(t, s.Current().Close(context.Background()))
	})
	return s
}

func (s *Server) newServer() *server.Server {
	// PollWait only paces polling (a poll that ends early answers
	// try_again and is polled again), so its value decides no outcome.
	srv, err := server.New(server.Config{
		APIKeys: []string{APIKey}, PollWait: 100 * time.Millisecond,
		Models: []server.ModelSpec{{Name: Base, VocabSize: Vocab}},
	}, server.Options{Backend: s.Backend, Store: s.Store})
	require.NoError(s.t, err)
	return srv
}

// drop reports whether this request is one to leave unanswered.
func (s *Server) drop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down == 0 {
		return false
	}
	s.down--
	s.dropped++
	return true
}

// Current returns the server serving now; a Restart replaces it.
func (s *Server) Current() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// Restart replaces the server by a new one, which knows no session, model
// or future, and closes the old one; the next drops requests, whatever
// they are, have their connections closed unanswered.
func (s *Server) Restart(drops int) {
	s.t.Helper()
	next := s.newServer()
	s.mu.Lock()
	old := s.srv
	s.srv, s.down = next, drops
	s.mu.Unlock()
	require.NoError(s.t, old.Close(context.Background()))
}

// Drops returns how many requests have been dropped so far. Once a request
// is answered after a Restart(n), all n have been.
func (s *Server) Drops() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}
