package resilient_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/backend/tinker/resilient"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// options are for a client of s that never gives up on its own: a test
// decides how long the server stays away by counting requests, not time.
// What the client logs goes to l, if not nil.
func options(s *servertest.Server, l io.Writer) resilient.Options {
	if l == nil {
		l = io.Discard
	}
	return resilient.Options{
		Client: tinker.Options{BaseURL: s.HTTP.URL, APIKey: servertest.APIKey, RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond,
			RetryMaxElapsed: time.Hour, PollInterval: time.Millisecond},
		Base: servertest.Base, Lora: wire.LoraConfig{Rank: 4}, RecoverFor: time.Hour,
		Logger: slog.New(slog.NewTextHandler(l, nil)),
	}
}

// refuse is a middleware that answers 400 Bad Request (a call error, not
// a lost server) to every request for endpoint (e.g. "optim_step") while
// on is set; the server does not see them.
func refuse(endpoint string, on *atomic.Bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.TrimPrefix(r.URL.Path, "/api/v1/") != endpoint || !on.Load() {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"refused by the test","category":"user"}`))
		})
	}
}

// state returns the fake model's parameter and version on s now.
func state(t *testing.T, s *servertest.Server, tr *resilient.Trainer) (float64, int64) {
	t.Helper()
	id := tr.ModelID()
	require.NotEmpty(t, id)
	m := s.Backend.Trainer(id)
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
