package resilient_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/backend/tinker/resilient"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	apiKey   = "resilient-key-0123456789"
	fakeBase = "fake-base"
)

// fake is a tandem server over servertest's fake backend, on one address,
// that the test can restart (every session, model and future is lost, as
// when a process is killed and started again), take down (connections are
// dropped unanswered), and intercept per endpoint. The backend and the
// checkpoint store outlive restarts, as a checkpoint folder does.
type fake struct {
	t     *testing.T
	be    *servertest.Backend
	store *servertest.Store
	hs    *httptest.Server

	mu  sync.Mutex
	srv *server.Server
	// down, while positive, is how many more requests are dropped.
	down int
	// hook, if set, sees every request first (its endpoint, e.g.
	// "optim_step"); an answer other than 0 is sent as that status and the
	// server does not see the request. It may block.
	hook func(endpoint string) int
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{t: t, be: &servertest.Backend{}, store: &servertest.Store{}}
	f.srv = f.newServer()
	f.hs = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.hs.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		require.NoError(t, f.srv.Close(context.Background()))
	})
	return f
}

func (f *fake) newServer() *server.Server {
	srv, err := server.New(server.Config{APIKeys: []string{apiKey}, Models: []server.ModelSpec{{Name: fakeBase, VocabSize: servertest.Vocab}}, PollWait: 100 * time.Millisecond},
		server.Options{Backend: f.be, Store: f.store})
	require.NoError(f.t, err)
	return srv
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	srv, hook := f.srv, f.hook
	drop := f.down > 0
	if drop {
		f.down--
	}
	f.mu.Unlock()
	if drop {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
		return
	}
	if hook != nil {
		if status := hook(strings.TrimPrefix(r.URL.Path, "/api/v1/")); status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":"refused by the test","category":"user"}`))
			return
		}
	}
	srv.ServeHTTP(w, r)
}

// restart drops every session, model and future; the next drops requests
// are left unanswered first.
func (f *fake) restart(drops int) {
	f.mu.Lock()
	old := f.srv
	f.srv = f.newServer()
	f.down = drops
	f.mu.Unlock()
	require.NoError(f.t, old.Close(context.Background()))
}

func (f *fake) setHook(h func(endpoint string) int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// state returns the fake model's parameter and version on the server now.
func (f *fake) state(t *testing.T, tr *resilient.Trainer) (float64, int64) {
	t.Helper()
	id := tr.ModelID()
	require.NotEmpty(t, id)
	m := f.be.Trainer(id)
	require.NotNil(t, m, "model %s on the server", id)
	theta, v := m.State()
	return theta, int64(v)
}

// logs collects what a Trainer or Sampler logs.
type logs struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// options are for a client of f that never gives up on its own: a test
// decides how long the server stays away by counting requests, not time.
func (f *fake) options(l io.Writer) resilient.Options {
	if l == nil {
		l = io.Discard
	}
	return resilient.Options{
		Client: tinker.Options{BaseURL: f.hs.URL, APIKey: apiKey, RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond,
			RetryMaxElapsed: time.Hour, PollInterval: time.Millisecond},
		Base: fakeBase, Lora: wire.LoraConfig{Rank: 4}, RecoverFor: time.Hour,
		Logger: slog.New(slog.NewTextHandler(l, nil)),
	}
}

// datum is a cross-entropy datum of n target tokens: the fake's
// forward_backward adds n to its pending gradient.
func datum(n int) rl.Datum {
	toks := make([]int, n)
	for i := range toks {
		toks[i] = i + 1
	}
	return rl.Datum{ModelInput: rl.Tokens(toks), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(toks)}}
}

var crossEntropy = rl.Loss{Name: rl.CrossEntropy}
