package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/backend/tinker/resilient"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
)

const fakeBase = "fake-base"

// restartable is a server on a fixed address that can lose all its state
// (as a killed and restarted process does) and be unreachable until a
// client has found it so. The fake backend and store persist across
// restarts, as a checkpoint folder does.
type restartable struct {
	t     *testing.T
	be    *servertest.Backend
	store *servertest.Store
	hs    *httptest.Server

	mu      sync.Mutex
	srv     *server.Server
	down    bool // until the next request, which is dropped
	dropped int  // requests dropped so far
}

// drops returns how many requests found the server away.
func (r *restartable) drops() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

func newRestartable(t *testing.T) *restartable {
	t.Helper()
	r := &restartable{t: t, be: &servertest.Backend{}, store: &servertest.Store{}}
	r.srv = r.newServer()
	r.hs = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.hs.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		require.NoError(t, r.srv.Close(context.Background()))
	})
	return r
}

func (r *restartable) newServer() *server.Server {
	srv, err := server.New(server.Config{APIKeys: []string{apiKey}, Models: []server.ModelSpec{{Name: fakeBase, VocabSize: servertest.Vocab}}, PollWait: 100 * time.Millisecond},
		server.Options{Backend: r.be, Store: r.store})
	require.NoError(r.t, err)
	return srv
}

func (r *restartable) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	srv, down := r.srv, r.down
	r.mu.Unlock()
	if down {
		// No answer at all: the client sees a dropped connection, and the
		// server is back for whatever it tries next.
		r.mu.Lock()
		r.down = false
		r.dropped++
		r.mu.Unlock()
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
		return
	}
	srv.ServeHTTP(w, req)
}

// crash drops every session, model and future, and drops the connection
// of the next request that comes in. How long the server is away is
// counted in requests, not timed, so the client sees the same crash on a
// fast machine and a loaded one.
func (r *restartable) crash() {
	r.mu.Lock()
	old := r.srv
	r.down = true
	r.srv = r.newServer()
	r.mu.Unlock()
	require.NoError(r.t, old.Close(context.Background()))
}

func quietOptions(url string) resilient.Options {
	return resilient.Options{
		Client: tinker.Options{BaseURL: url, APIKey: apiKey, RetryInitial: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, RetryMaxElapsed: 200 * time.Millisecond, PollInterval: time.Millisecond},
		Base:   fakeBase, Lora: lora, RecoverFor: recoverForever,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func datum(n int) rl.Datum {
	toks := make([]int, n)
	for i := range toks {
		toks[i] = i + 1
	}
	return rl.Datum{ModelInput: rl.Tokens(toks), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(toks)}}
}

// TestTrainerRecoversExactly drives the fake trainer (theta += lr × tokens
// per step) through two crashes: one between steps, one between a step's
// forward_backward and its optim_step. Distinct learning rates make theta
// a record of which steps were applied and how often: it must equal the
// uninterrupted sum, at the uninterrupted version.
func TestTrainerRecoversExactly(t *testing.T) {
	t.Parallel()
	for _, every := range []int{1, 3} {
		t.Run(fmt.Sprintf("save every %d", every), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			srv := newRestartable(t)
			opts := quietOptions(srv.hs.URL)
			opts.SaveEvery = every
			tr, err := resilient.NewTrainer(ctx, opts)
			require.NoError(t, err)
			defer tr.Close()

			const tokens, n = 3, 7
			want := 0.0
			for i := 1; i <= n; i++ {
				lr := float64(i) / 16
				want += lr * tokens
				_, err := tr.ForwardBackward(ctx, []rl.Datum{datum(tokens)}, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
				require.NoError(t, err)
				if i == 5 {
					srv.crash() // the forward_backward is lost with the server
				}
				out, err := tr.OptimStep(ctx, rl.AdamParams{LearningRate: lr}).Wait(ctx)
				require.NoError(t, err)
				assert.Equal(t, policy.Version(i), out.Version)
				_, err = tr.SaveForSampler(ctx, fmt.Sprintf("s%d", i)).Wait(ctx)
				require.NoError(t, err)
				if i == 2 {
					srv.crash()
				}
			}
			assert.Equal(t, 2, tr.Recoveries())
			assert.GreaterOrEqual(t, srv.drops(), 2, "the client found the server away after each crash")
			theta, v := srv.be.Trainer(tr.ModelID()).State()
			assert.InDelta(t, want, theta, 1e-12, "every step applied exactly once")
			assert.Equal(t, policy.Version(n), v)
			assert.True(t, srv.be.Trainer(tr.ModelID()).LoadedOptimizer(), "the state was resumed with its optimizer")
		})
	}
}

// TestTrainerPassesCallErrorsThrough: a call the server refuses for what
// it asks is not retried and not recovered from.
func TestTrainerPassesCallErrorsThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newRestartable(t)
	tr, err := resilient.NewTrainer(ctx, quietOptions(srv.hs.URL))
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.LoadState(ctx, policy.Ref{URI: "tinker://nobody/weights/nothing"}, true).Wait(ctx)
	require.Error(t, err)
	assert.Zero(t, tr.Recoveries())
}

// TestSamplerRecoversItsVersion: after a crash the sampler reopens its
// session on the adapter it served and keeps reporting that version.
func TestSamplerRecoversItsVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newRestartable(t)
	opts := quietOptions(srv.hs.URL)
	tr, err := resilient.NewTrainer(ctx, opts)
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.ForwardBackward(ctx, []rl.Datum{datum(2)}, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 0.5}).Wait(ctx)
	require.NoError(t, err)
	ref, err := tr.SaveForSampler(ctx, "v1").Wait(ctx)
	require.NoError(t, err)

	smp, err := resilient.NewSampler(ctx, opts)
	require.NoError(t, err)
	defer smp.Close()
	require.NoError(t, smp.Load(ctx, ref))
	prompt := rl.Tokens([]int{1, 2})
	p := rl.SamplingParams{MaxTokens: 2}
	before, err := smp.Sample(ctx, prompt, 2, p)
	require.NoError(t, err)
	srv.crash()

	var wg sync.WaitGroup
	outs := make([]rl.SampleOutput, 8)
	errs := make([]error, 8)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = smp.Sample(ctx, prompt, 2, p)
		}()
	}
	wg.Wait()
	for i := range outs {
		require.NoError(t, errs[i])
		assert.Equal(t, policy.Version(1), outs[i].Version)
		assert.Equal(t, before.Sequences[0].Logprobs, outs[i].Sequences[0].Logprobs, "the same weights after the crash")
	}
	assert.Equal(t, 1, smp.Recoveries(), "concurrent calls share one recovery")
	assert.GreaterOrEqual(t, srv.drops(), 1, "a client found the server away")
}

func TestRecoverable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&tinker.ConnError{Method: "POST", Path: "/x", Err: io.EOF}, true},
		{&tinker.StatusError{Status: http.StatusNotFound}, true},
		{&tinker.StatusError{Status: http.StatusServiceUnavailable}, true},
		{&tinker.StatusError{Status: http.StatusBadRequest}, false},
		{&tinker.RequestFailedError{Message: "bad loss", Category: "user"}, false},
		{tinker.ErrFutureExpired, true},
		{context.Canceled, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, resilient.Recoverable(c.err), "%v", c.err)
	}
}
