package resilient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/backend/tinker/resilient"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/sync/serial"
)

// step runs one training step of tokens target tokens at learning rate lr
// and returns the version after it. On the fake, theta grows by lr·tokens.
func step(t *testing.T, tr *resilient.Trainer, tokens int, lr float64) policy.Version {
	t.Helper()
	ctx := context.Background()
	_, err := tr.ForwardBackward(ctx, []rl.Datum{datum(tokens)}, crossEntropy).Wait(ctx)
	require.NoError(t, err)
	out, err := tr.OptimStep(ctx, rl.AdamParams{LearningRate: lr}).Wait(ctx)
	require.NoError(t, err)
	return out.Version
}

// TestTrainerReplaysExactly drives the fake trainer through two restarts of
// its server, one between steps and one between a step's forward_backward
// and its optim_step, with the server answering at once or only after
// dropping a few requests. Distinct learning rates make theta a record of
// which steps were applied and how often: it must be the uninterrupted
// sum, at the uninterrupted version.
func TestTrainerReplaysExactly(t *testing.T) {
	t.Parallel()
	for _, every := range []int{1, 3} {
		for _, drops := range []int{0, 3} {
			t.Run(fmt.Sprintf("save every %d, %d requests dropped", every, drops), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				s := servertest.NewServer(t, nil)
				var l logs
				opts := options(s, &l)
				opts.SaveEvery = every
				tr, err := resilient.NewTrainer(ctx, opts)
				require.NoError(t, err)
				defer tr.Close()

				const tokens, n = 3, 7
				want := 0.0
				for i := 1; i <= n; i++ {
					lr := float64(i) / 16
					want += lr * tokens
					_, err := tr.ForwardBackward(ctx, []rl.Datum{datum(tokens)}, crossEntropy).Wait(ctx)
					require.NoError(t, err)
					if i == 5 {
						s.Restart(drops) // the forward_backward is lost with the server
					}
					out, err := tr.OptimStep(ctx, rl.AdamParams{LearningRate: lr}).Wait(ctx)
					require.NoError(t, err)
					assert.Equal(t, policy.Version(i), out.Version)
					ref, err := tr.SaveForSampler(ctx, fmt.Sprintf("s%d", i)).Wait(ctx)
					require.NoError(t, err)
					assert.Equal(t, policy.Version(i), ref.Version)
					if i == 2 {
						s.Restart(drops)
					}
				}
				assert.Equal(t, 2, tr.Recoveries())
				assert.Equal(t, 2*drops, s.Drops(), "the client found the server away for all the dropped requests")
				theta, v := state(t, s, tr)
				assert.InDelta(t, want, theta, 1e-12, "every step applied exactly once")
				assert.Equal(t, int64(n), v)
				assert.True(t, s.Backend.Trainer(tr.ModelID()).LoadedOptimizer(), "the state was resumed with its optimizer")
				out := l.String()
				assert.Contains(t, out, "resilient: trainer lost its model; recovering")
				assert.Contains(t, out, "resilient: trainer recovered")
				assert.NotContains(t, out, "e2e:")
			})
		}
	}
}

// TestTrainerQueuesWithoutBlocking: while a call is held on the server,
// the calls behind it are submitted without blocking; one whose ctx ends
// before its turn is skipped, is not sent, and is not replayed after a
// restart.
func TestTrainerQueuesWithoutBlocking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := servertest.NewServer(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v1/forward_backward" {
				once.Do(func() {
					close(arrived)
					<-release
				})
			}
			next.ServeHTTP(w, r)
		})
	})
	opts := options(s, nil)
	opts.SaveEvery = 2 // the step stays in the journal
	tr, err := resilient.NewTrainer(ctx, opts)
	require.NoError(t, err)
	defer tr.Close()

	held := tr.ForwardBackward(ctx, []rl.Datum{datum(2)}, crossEntropy)
	<-arrived
	cause := errors.New("the caller left")
	cctx, cancel := context.WithCancelCause(ctx)
	skipped := tr.ForwardBackward(cctx, []rl.Datum{datum(100)}, crossEntropy)
	opt := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1})
	save := tr.SaveForSampler(ctx, "v1")
	cancel(cause)
	close(release)

	_, err = held.Wait(ctx)
	require.NoError(t, err)
	_, err = skipped.Wait(ctx)
	require.ErrorIs(t, err, cause)
	st, err := opt.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), st.Version)
	ref, err := save.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), ref.Version)
	theta, _ := state(t, s, tr)
	assert.InDelta(t, 2.0, theta, 1e-12, "only the held call's 2 tokens")

	// The journal holds the held call and the step, not the skipped call.
	s.Restart(0)
	assert.Equal(t, policy.Version(2), step(t, tr, 3, 1))
	assert.Equal(t, 1, tr.Recoveries())
	theta, v := state(t, s, tr)
	assert.InDelta(t, 2.0+3.0, theta, 1e-12)
	assert.Equal(t, int64(2), v)
}

// TestTrainerPassesCallErrorsThrough: a call the server refuses for what
// it asks (a 404 for a checkpoint while the model is known) is neither
// retried nor recovered from.
func TestTrainerPassesCallErrorsThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := servertest.NewServer(t, nil)
	tr, err := resilient.NewTrainer(ctx, options(s, nil))
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.LoadState(ctx, policy.Ref{URI: "tinker://nobody/weights/nothing"}, true).Wait(ctx)
	require.Error(t, err)
	assert.Zero(t, tr.Recoveries())
	assert.Equal(t, policy.Version(1), step(t, tr, 1, 1), "the trainer goes on")
}

// TestTrainerFailedRecoveryIsRetried: when a recovery fails for good (the
// restarted server refuses to create the model), the call fails and says
// so; the next call recovers again, from the last saved state.
func TestTrainerFailedRecoveryIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var refusing atomic.Bool
	s := servertest.NewServer(t, refuse("create_model", &refusing))
	tr, err := resilient.NewTrainer(ctx, options(s, nil))
	require.NoError(t, err)
	defer tr.Close()
	require.Equal(t, policy.Version(1), step(t, tr, 3, 0.5))

	refusing.Store(true)
	s.Restart(0)
	_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1}).Wait(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "recovery failed")
	assert.Contains(t, err.Error(), "create model")
	assert.Empty(t, tr.ModelID(), "no model after a failed recovery")
	assert.Equal(t, 1, tr.Recoveries())

	refusing.Store(false)
	assert.Equal(t, policy.Version(2), step(t, tr, 3, 0.25), "the failed step was not applied")
	assert.Equal(t, 2, tr.Recoveries())
	theta, v := state(t, s, tr)
	assert.InDelta(t, 0.5*3+0.25*3, theta, 1e-12)
	assert.Equal(t, int64(2), v)
}

// TestTrainerAutoSaveFailureIsLogged: a failed auto-save does not fail the
// step; it is logged, and a later recovery replays from the save before.
func TestTrainerAutoSaveFailureIsLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var refusing atomic.Bool
	s := servertest.NewServer(t, refuse("save_weights", &refusing))
	var l logs
	tr, err := resilient.NewTrainer(ctx, options(s, &l))
	require.NoError(t, err)
	defer tr.Close()

	refusing.Store(true)
	assert.Equal(t, policy.Version(1), step(t, tr, 2, 1))
	assert.Contains(t, l.String(), "resilient: auto save failed")
	refusing.Store(false)

	s.Restart(0)
	assert.Equal(t, policy.Version(2), step(t, tr, 3, 1))
	theta, v := state(t, s, tr)
	assert.InDelta(t, 2.0+3.0, theta, 1e-12, "the unsaved step was replayed")
	assert.Equal(t, int64(2), v)
	assert.False(t, s.Backend.Trainer(tr.ModelID()).LoadedOptimizer(), "nothing saved to resume from: a fresh model")
	assert.NotContains(t, l.String(), "e2e:")
}

// TestTrainerCloseDrains: Close lets the calls already submitted finish;
// calls after it fail with serial.ErrClosed.
func TestTrainerCloseDrains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := servertest.NewServer(t, nil)
	tr, err := resilient.NewTrainer(ctx, options(s, nil))
	require.NoError(t, err)
	id := tr.ModelID()
	fb := tr.ForwardBackward(ctx, []rl.Datum{datum(4)}, crossEntropy)
	op := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1})
	require.NoError(t, tr.Close())
	for _, done := range []<-chan struct{}{fb.Done(), op.Done()} {
		select {
		case <-done:
		default:
			t.Fatal("Close returned before a call submitted ahead of it resolved")
		}
	}
	st, err := op.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), st.Version)
	theta, _ := s.Backend.Trainer(id).State()
	assert.InDelta(t, 4.0, theta, 1e-12)

	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.ErrorIs(t, err, serial.ErrClosed)
	assert.Empty(t, tr.ModelID())
	require.NoError(t, tr.Close(), "Close is idempotent")
}

// TestRecoverable: the errors that may mean the server lost the client's
// model, session or future are recovered from; the call's own are not.
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
