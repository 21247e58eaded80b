package tinker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// Faults a flaky middleware injects.
const (
	fault429         = "429"
	fault503         = "503"
	fault408         = "408"
	fault410         = "410"
	fault400         = "400"
	fault400Empty    = "400-empty" // a bare 400 with no body, as a proxy sends
	fault402         = "402"
	faultResetBefore = "reset-before" // connection dropped before the server sees the call
	faultResetAfter  = "reset-after"  // the server applies the call, the answer is lost
)

// flaky injects faults into the first requests of each endpoint and
// records every request it sees.
type flaky struct {
	mu    sync.Mutex
	plan  map[string][]string // endpoint → faults for its next requests
	seen  map[string]int
	idems map[string][]string // endpoint → X-Idempotency-Key of each request
}

func newFlaky(plan map[string][]string) *flaky {
	return &flaky{plan: plan, seen: map[string]int{}, idems: map[string][]string{}}
}

func (f *flaky) count(endpoint string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[endpoint]
}

func (f *flaky) keys(endpoint string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.idems[endpoint]...)
}

func (f *flaky) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep := strings.TrimPrefix(r.URL.Path, "/api/v1/")
		f.mu.Lock()
		f.seen[ep]++
		f.idems[ep] = append(f.idems[ep], r.Header.Get("X-Idempotency-Key"))
		var fault string
		if p := f.plan[ep]; len(p) > 0 {
			fault, f.plan[ep] = p[0], p[1:]
		}
		f.mu.Unlock()
		switch fault {
		case "":
			next.ServeHTTP(w, r)
		case fault400Empty:
			w.WriteHeader(http.StatusBadRequest)
		case fault429, fault503, fault408, fault410, fault400, fault402:
			code := map[string]int{fault429: 429, fault503: 503, fault408: 408, fault410: 410, fault400: 400, fault402: 402}[fault]
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":"injected ` + fault + `","category":"server"}`))
		case faultResetBefore:
			hangUp(w)
		case faultResetAfter:
			next.ServeHTTP(httptest.NewRecorder(), r)
			hangUp(w)
		default: // any other status, by its number
			code, err := strconv.Atoi(fault)
			if err != nil {
				panic("flaky: unknown fault " + fault)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":"injected ` + fault + `","category":"user"}`))
		}
	})
}

func hangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func TestRetriesOnFlakyServer(t *testing.T) {
	t.Parallel()
	f := newFlaky(map[string][]string{
		"create_session":           {fault503},
		"create_model":             {faultResetAfter},
		"forward_backward":         {faultResetAfter, fault429},
		"optim_step":               {fault429, fault503, faultResetAfter, faultResetBefore, fault408},
		"save_weights_for_sampler": {fault503},
		"create_sampling_session":  {faultResetBefore},
		"asample":                  {fault429, faultResetAfter},
	})
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	e := newEnv(t, f.wrap, func(o *tinker.Options) { tinker.FakeClock(o, clk.now, clk.sleep) })
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	fb := tr.ForwardBackward(ctx, []rl.Datum{datum(1, 2)}, ce)
	op := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1})
	_, err = fb.Wait(ctx)
	require.NoError(t, err)
	st, err := op.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), st.Version)
	ref, err := tr.SaveForSampler(ctx, "v1").Wait(ctx)
	require.NoError(t, err)
	smp := e.c.NewSampler(base)
	require.NoError(t, smp.Load(ctx, ref))
	out, err := smp.Sample(ctx, rl.Tokens([]int{1}), 2, rl.SamplingParams{MaxTokens: 2})
	require.NoError(t, err)
	assert.Len(t, out.Sequences, 2)

	// Every call was applied exactly once although several reached the
	// server twice.
	assert.Equal(t, []string{"forward_backward", "optim_step", "save_sampler_weights"}, e.be.Trainer(tr.ModelID()).Calls())
	theta, v := e.be.Trainer(tr.ModelID()).State()
	assert.Equal(t, policy.Version(1), v)
	assert.InDelta(t, 2.0, theta, 1e-12)
	assert.Equal(t, 6, f.count("optim_step"))
	// Status faults (429, 503, 408) are retried by the client: 7 of them.
	// Dropped connections may be retried by net/http itself, which resends
	// requests carrying an X-Idempotency-Key on a fresh connection.
	assert.GreaterOrEqual(t, e.c.Retries(), int64(7))
	// One logical call keeps one idempotency key across its retries.
	keys := f.keys("optim_step")
	for _, k := range keys {
		assert.Equal(t, keys[0], k)
	}
	assert.NotEmpty(t, keys[0])
	log := e.srv.StepLog(tr.ModelID())
	require.Len(t, log, 3)
}

func TestNoRetryOnBadRequest(t *testing.T) {
	t.Parallel()
	f := newFlaky(map[string][]string{"optim_step": {fault400}})
	e := newEnv(t, f.wrap, nil)
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	var se *tinker.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusBadRequest, se.Status)
	assert.Equal(t, 1, f.count("optim_step"), "a 400 is never retried")
	assert.Equal(t, policy.Version(0), tr.Version())

	// A 400 from the real server (bad checkpoint name) is not retried either.
	_, err = tr.SaveState(ctx, "../x").Wait(ctx)
	require.Error(t, err)
	assert.Equal(t, 0, f.count("save_weights"), "caught before sending")
}

func TestPollingSemantics(t *testing.T) {
	t.Parallel()
	f := newFlaky(map[string][]string{"retrieve_future": {fault408, fault503, faultResetBefore}})
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	e := newEnv(t, f.wrap, func(o *tinker.Options) { tinker.FakeClock(o, clk.now, clk.sleep) })
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err, "408, 5xx and a dropped connection while polling all poll again")

	// 410 while polling a training call: the future is gone; the call is not resent.
	f.mu.Lock()
	f.plan["retrieve_future"] = []string{fault410}
	f.mu.Unlock()
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.ErrorIs(t, err, tinker.ErrFutureExpired)
	assert.Equal(t, 2, f.count("optim_step"))

	// 410 while polling a sample: the sample is sent again.
	f.mu.Lock()
	f.plan["retrieve_future"] = []string{fault410}
	f.mu.Unlock()
	out, err := e.c.NewSampler(base).Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 1})
	require.NoError(t, err)
	assert.Len(t, out.Sequences, 1)
	assert.Equal(t, 2, f.count("asample"))
}

func TestCloseCancelsCalls(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "optim_step") {
				select {
				case <-block:
				case <-r.Context().Done():
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	e := newEnv(t, wrap, nil)
	defer close(block)
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	fut := tr.OptimStep(ctx, rl.AdamParams{})
	later := tr.ForwardBackward(ctx, []rl.Datum{datum(1)}, ce)
	require.NoError(t, e.c.Close())
	_, err = fut.Wait(ctx)
	require.ErrorIs(t, err, tinker.ErrClosed)
	_, err = later.Wait(ctx)
	require.ErrorIs(t, err, tinker.ErrClosed)
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.ErrorIs(t, err, tinker.ErrClosed, "a call after Close")
}
