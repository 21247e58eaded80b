package tinker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	apiKey = servertest.APIKey
	base   = servertest.Base
)

// env is a tandem server over the fake backend, optionally behind a
// middleware, and a client of it.
type env struct {
	srv *server.Server
	be  *servertest.Backend
	hs  *httptest.Server
	c   *tinker.Client
}

func newEnv(t *testing.T, wrap func(http.Handler) http.Handler, mod func(*tinker.Options)) *env {
	t.Helper()
	s := servertest.NewServer(t, wrap)
	opts := tinker.Options{
		BaseURL: s.HTTP.URL, APIKey: apiKey, HTTPClient: s.HTTP.Client(),
		// The faults tests inject are finite, so retries never need to give
		// up: no elapsed-time budget that a slow machine could exhaust.
		RetryInitial: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond, RetryMaxElapsed: time.Hour,
		PollInterval: time.Millisecond,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := tinker.New(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return &env{srv: s.Current(), be: s.Backend, hs: s.HTTP, c: c}
}

func datum(tokens ...int) rl.Datum {
	targets := make([]int, len(tokens))
	for i, t := range tokens {
		targets[i] = t + 1
	}
	return rl.Datum{ModelInput: rl.Tokens(tokens), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(targets)}}
}

var ce = rl.Loss{Name: rl.CrossEntropy}

// forceJSON keeps a test's client on the v0.3.0 JSON protocol.
func forceJSON(o *tinker.Options) { o.ForceJSON = true }

// TestRoundTrip in JSON mode; TestProtoRoundTrip compares both modes.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, forceJSON)
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)

	// Two steps, each forward_backward and optim_step submitted back to
	// back before anything is waited on.
	var fbs []*rl.Future[rl.ForwardBackwardOutput]
	var ops []*rl.Future[rl.OptimStepOutput]
	for range 2 {
		fbs = append(fbs, tr.ForwardBackward(ctx, []rl.Datum{datum(1, 2, 3)}, ce))
		ops = append(ops, tr.OptimStep(ctx, rl.AdamParams{LearningRate: 0.25}))
	}
	save := tr.SaveForSampler(ctx, "after-2")
	for i := range 2 {
		out, err := fbs[i].Wait(ctx)
		require.NoError(t, err)
		// theta before pass i is 0.25·3·i; logprob of target 2 follows.
		assert.InDelta(t, servertest.LogProb(0.75*float64(i), 2), out.LossFnOutputs[0]["logprobs"].Floats[0], 1e-12)
		st, err := ops[i].Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, policy.Version(i+1), st.Version)
	}
	ref, err := save.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(2), ref.Version)
	assert.Equal(t, "tinker://"+tr.ModelID()+"/sampler_weights/after-2", ref.URI)
	assert.Equal(t, policy.SamplerWeights, ref.Kind)

	smp := e.c.NewSampler(base)
	base0, err := smp.Sample(ctx, rl.Tokens([]int{4, 5}), 1, rl.SamplingParams{MaxTokens: 2})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(0), base0.Version, "before Load the base model (version 0) is sampled")

	require.NoError(t, smp.Load(ctx, ref))
	seed := int64(1)
	out, err := smp.Sample(ctx, rl.Tokens([]int{4, 5}), 3, rl.SamplingParams{MaxTokens: 3, Seed: &seed, StopTokens: []int{11}})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(2), out.Version)
	require.Len(t, out.Sequences, 3)
	// Sequence i is (9 + 1 + i + j) mod Vocab; 11 is a stop token.
	assert.Equal(t, []int{10, 11}, out.Sequences[0].Tokens)
	assert.Equal(t, rl.StopStop, out.Sequences[0].StopReason)
	assert.Equal(t, []int{12, 13, 14}, out.Sequences[2].Tokens)
	assert.Equal(t, rl.StopLength, out.Sequences[2].StopReason)
	assert.InDelta(t, servertest.LogProb(1.5, 12), out.Sequences[2].Logprobs[0], 1e-12, "the loaded version's weights")

	log := e.srv.StepLog(tr.ModelID())
	require.Len(t, log, 5)
	for i, entry := range log {
		assert.Equal(t, int64(i+1), entry.Seq)
		assert.Equal(t, server.StepApplied, entry.Status)
	}
	assert.Equal(t, policy.Version(2), tr.Version())
}

func TestSaveAndLoadState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	a, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{Rank: 4})
	require.NoError(t, err)
	a.ForwardBackward(ctx, []rl.Datum{datum(1)}, ce)
	a.OptimStep(ctx, rl.AdamParams{LearningRate: 1})
	ref, err := a.SaveState(ctx, "ckpt").Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), ref.Version)

	b, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{Rank: 4})
	require.NoError(t, err)
	_, err = b.LoadState(ctx, ref, true).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), b.Version())
	st, err := b.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(2), st.Version)
	assert.True(t, e.be.Trainer(b.ModelID()).LoadedOptimizer())

	b.ForwardBackward(ctx, []rl.Datum{datum(1)}, ce)
	require.NoError(t, b.Unload(ctx))
	assert.Equal(t, []string{"load_state", "optim_step", "forward_backward"}, e.be.Trainer(b.ModelID()).Calls(), "calls before Unload were applied")
	_, err = b.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	var se *tinker.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 404, se.Status)
}

// TestChunkedForwardBackward: JSON mode's chunks (TestProtoChunking has
// protobuf mode's).
func TestChunkedForwardBackward(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, forceJSON)
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	n := 2*tinker.MaxChunkLen + 5
	data := make([]rl.Datum, n)
	for i := range data {
		data[i] = datum(i % 500)
	}
	out, err := tr.ForwardBackward(ctx, data, ce).Wait(ctx)
	require.NoError(t, err)
	require.Len(t, out.LossFnOutputs, n)
	// loss:sum over all data = Σ −logprob = n·ln(Vocab) at theta 0.
	assert.InDelta(t, float64(n)*-servertest.LogProb(0, 0), out.Metrics["loss:sum"], 1e-6)
	log := e.srv.StepLog(tr.ModelID())
	require.Len(t, log, 3, "three chunks, three seq_ids")
	st, err := tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), st.Version)
	assert.Equal(t, int64(4), e.srv.StepLog(tr.ModelID())[3].Seq)
}

func TestFailedFutureIsRequestFailedError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	e.be.Fail = func(kind string) error {
		if kind == "optim_step" {
			return errors.New("diverged")
		}
		return nil
	}
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	var rf *tinker.RequestFailedError
	require.ErrorAs(t, err, &rf)
	assert.Contains(t, rf.Message, "diverged")
	assert.Equal(t, policy.Version(0), tr.Version(), "a failed step does not count")
	// Later calls still go through.
	_, err = tr.ForwardBackward(ctx, []rl.Datum{datum(1)}, ce).Wait(ctx)
	require.NoError(t, err)
}

// TestHeartbeat: the client beats every period, and its status counts the
// beats answered. The server sees beat n+1 only after the client has
// recorded beat n (one beat at a time), so when the fourth arrives the
// status must show at least three.
// TestSendsDoNotWaitForResults: a call is sent as soon as the one before
// it has been sent, not when its result is in. The server here answers no
// poll until it has received the optim_step submitted behind a
// forward_backward; were sends chained to results, neither would resolve.
func TestSendsDoNotWaitForResults(t *testing.T) {
	t.Parallel()
	stepSent := make(chan struct{})
	var (
		once  sync.Once
		armed atomic.Bool // set once the model exists
	)
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/optim_step"):
				next.ServeHTTP(w, r)
				once.Do(func() { close(stepSent) })
				return
			case armed.Load() && strings.HasSuffix(r.URL.Path, "/retrieve_future"):
				select {
				case <-stepSent:
				case <-r.Context().Done():
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	e := newEnv(t, wrap, nil)
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	armed.Store(true)
	fb := tr.ForwardBackward(ctx, []rl.Datum{datum(1, 2)}, ce)
	op := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1})
	_, err = fb.Wait(ctx)
	require.NoError(t, err)
	st, err := op.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), st.Version)
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	fourth := make(chan struct{})
	var beats atomic.Int32
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/session_heartbeat") && beats.Add(1) == 4 {
				close(fourth)
			}
			next.ServeHTTP(w, r)
		})
	}
	e := newEnv(t, wrap, func(o *tinker.Options) { o.Heartbeat = time.Millisecond })
	<-fourth
	n, _, err := e.c.HeartbeatStatus()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 3)
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	caps, err := e.c.Capabilities(context.Background())
	require.NoError(t, err)
	assert.Equal(t, base, caps.SupportedModels[0].ModelName)
}

func TestOptionsFromEnvironment(t *testing.T) {
	t.Setenv(tinker.EnvBaseURL, "http://127.0.0.1:1")
	t.Setenv(tinker.EnvAPIKey, "from-env")
	require.NoError(t, tinker.Options{}.Validate())
	t.Setenv(tinker.EnvAPIKey, "")
	err := tinker.Options{}.Validate()
	require.ErrorIs(t, err, tinker.ErrOptions)
	assert.Contains(t, err.Error(), tinker.EnvAPIKey)
	require.NoError(t, tinker.Options{APIKey: "explicit"}.Validate(), "an explicit option stands in for the environment")
	t.Setenv(tinker.EnvTags, "a,b")
	t.Setenv(tinker.EnvCFClientID, "cf-id")
	var got []string
	var gotCF string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/client/config") {
			http.NotFound(w, r) // an older server
			return
		}
		var body struct{ Tags []string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		got, gotCF = body.Tags, r.Header.Get("CF-Access-Client-Id")
		w.WriteHeader(http.StatusBadRequest) // with a body: an empty 400 would be retried as a proxy's
		_, _ = w.Write([]byte(`{"error":"refused"}`))
	}))
	defer srv.Close()
	_, err = tinker.New(context.Background(), tinker.Options{BaseURL: srv.URL, APIKey: "k"})
	require.Error(t, err)
	assert.Equal(t, []string{"a", "b"}, got)
	assert.Equal(t, "cf-id", gotCF)
	t.Setenv(tinker.EnvBaseURL, "ftp://x")
	assert.ErrorIs(t, tinker.Options{APIKey: "k"}.Validate(), tinker.ErrOptions)
}

// TestBadCallDoesNotStallLaterOnes, in both modes: the server uses up
// the seq_id of a body it refuses, JSON or protobuf, so the next call is
// not held up. The refusal names the bad field in the message's own terms.
func TestBadCallDoesNotStallLaterOnes(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		mod   func(*tinker.Options)
		field string
	}{
		"json":     {forceJSON, "forward_backward_input.data[0].loss_fn_inputs.target_tokens"},
		"protobuf": {nil, "data[0].loss_fn_inputs.target_tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil, c.mod)
			ctx := context.Background()
			tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
			require.NoError(t, err)
			bad := rl.Datum{ModelInput: rl.Tokens([]int{1, 2}), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{5})}}
			fb := tr.ForwardBackward(ctx, []rl.Datum{bad}, ce)
			op := tr.OptimStep(ctx, rl.AdamParams{})
			_, err = fb.Wait(ctx)
			var se *tinker.StatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, 400, se.Status)
			assert.Equal(t, c.field, se.Field)
			st, err := op.Wait(ctx)
			require.NoError(t, err, "the server used up the bad call's seq_id, so the step was not held up")
			assert.Equal(t, policy.Version(1), st.Version)
			log := e.srv.StepLog(tr.ModelID())
			require.Len(t, log, 2)
			assert.Equal(t, server.StepRejected, log[0].Status)
		})
	}
}

// TestResumeTrainer: weights_info gives the saved state's base and LoRA
// shape; ResumeTrainer makes a model of that shape and loads the state.
func TestResumeTrainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	lora := wire.LoraConfig{Rank: 4, TrainMLP: true}
	a, err := e.c.NewTrainer(ctx, base, lora)
	require.NoError(t, err)
	a.ForwardBackward(ctx, []rl.Datum{datum(1)}, ce)
	a.OptimStep(ctx, rl.AdamParams{LearningRate: 1})
	ref, err := a.SaveState(ctx, "resume-me").Wait(ctx)
	require.NoError(t, err)

	info, err := e.c.WeightsInfo(ctx, ref.URI)
	require.NoError(t, err)
	assert.Equal(t, wire.WeightsInfoResponse{BaseModel: base, IsLora: true, LoraRank: 4, TrainMLP: true}, info)

	b, err := e.c.ResumeTrainer(ctx, ref, true)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), b.Version())
	assert.True(t, e.be.Trainer(b.ModelID()).LoadedOptimizer())
	thA, _ := e.be.Trainer(a.ModelID()).State()
	thB, _ := e.be.Trainer(b.ModelID()).State()
	assert.Equal(t, thA, thB)

	_, err = e.c.ResumeTrainer(ctx, policy.Ref{URI: "tinker://nope/weights/x"}, false)
	var se *tinker.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusNotFound, se.Status)
	_, err = e.c.WeightsInfo(ctx, "s3://bucket/x")
	require.Error(t, err, "not a tinker path: refused before sending")
}
