package server_test

import (
	"encoding/json"
	"fmt"
	"github.com/tandemrl/tandem/server"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

// TestSDKFlow drives a whole training round with the JSON the Python SDK
// sends: pipelined forward_backward and optim_step, save for sampler, a
// sampling session and a sample.
func TestSDKFlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sess := h.session(keyA)
	model := h.model(keyA, sess, 0)

	// Pipelined: both submitted before either is polled.
	fb := h.submit(keyA, "forward_backward", fwdBwd(model, 1, 10, 20, 30))
	op := h.submit(keyA, "optim_step", optim(model, 2, 0.5))

	out, err := wire.DecodeForwardBackwardOutput(h.ok(keyA, fb))
	require.NoError(t, err)
	require.Len(t, out.LossFnOutputs, 1)
	lp := out.LossFnOutputs[0]["logprobs"].Floats
	require.Len(t, lp, 3)
	// theta was 0 during the pass: every target has log-prob -ln(Vocab).
	want := servertest.LogProb(0, 11)
	assert.InDelta(t, want, lp[0], 1e-12)
	assert.InDelta(t, -3*want, out.Metrics["loss:sum"], 1e-9)

	_, err = wire.DecodeOptimStepResponse(h.ok(keyA, op))
	require.NoError(t, err)
	theta, v := h.be.Trainer(model).State()
	assert.Equal(t, policy.Version(1), v)
	assert.InDelta(t, 0.5*3, theta, 1e-12, "theta = lr × Σweights")

	sv := h.submit(keyA, "save_weights_for_sampler", fmt.Sprintf(`{"model_id":%q,"path":"step-1","seq_id":3}`, model))
	pr, err := wire.DecodePathResponse(h.ok(keyA, sv), true)
	require.NoError(t, err)
	assert.Equal(t, "tinker://"+model+"/sampler_weights/step-1", pr.Path)

	ss, err := wire.DecodeCreateSamplingSessionResponse(h.post(keyA, "create_sampling_session",
		fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":0,"model_path":%q}`, sess, pr.Path)))
	require.NoError(t, err)

	body := fmt.Sprintf(`{"sampling_session_id":%q,"seq_id":0,"num_samples":2,"prompt":{"chunks":[{"tokens":[1,2,3]}]},
		"sampling_params":{"max_tokens":4,"seed":5},"prompt_logprobs":true,"topk_prompt_logprobs":0}`, ss.SamplingSessionID)
	sr, err := wire.DecodeSampleResponse(h.ok(keyA, h.submit(keyA, "asample", body)))
	require.NoError(t, err)
	require.Len(t, sr.Sequences, 2)
	// The fake sampler's sequence i is (Σprompt + seed + i + j) mod Vocab.
	assert.Equal(t, []int{11, 12, 13, 14}, sr.Sequences[0].Tokens)
	assert.Equal(t, []int{12, 13, 14, 15}, sr.Sequences[1].Tokens)
	assert.InDelta(t, servertest.LogProb(theta, 11), sr.Sequences[0].Logprobs[0], 1e-12, "served version 1's weights")
	require.NotNil(t, sr.PolicyVersion)
	assert.Equal(t, int64(1), *sr.PolicyVersion)
	require.Len(t, sr.PromptLogprobs, 3)
	assert.Nil(t, sr.PromptLogprobs[0])

	// A duplicate seq_id in the sampling session answers the same future.
	again := h.submit(keyA, "asample", body)
	assert.NotEmpty(t, again)

	log := h.srv.StepLog(model)
	require.Len(t, log, 3)
	assert.Equal(t, []string{"forward_backward", "optim_step", "save_weights_for_sampler"}, []string{log[0].Kind, log[1].Kind, log[2].Kind})
	assert.Equal(t, []policy.Version{0, 1, 1}, []policy.Version{log[0].Version, log[1].Version, log[2].Version})
	for _, e := range log {
		assert.Equal(t, server.StepApplied, e.Status)
	}
}

func TestOutOfOrderSeqIDsAppliedInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	model := h.model(keyA, h.session(keyA), 0)
	// seq 3, then 2, then 1 arrive: they must apply as 1, 2, 3.
	op := h.submit(keyA, "optim_step", optim(model, 3, 1))
	fb2 := h.submit(keyA, "forward_backward", fwdBwd(model, 2, 5))
	fb1 := h.submit(keyA, "forward_backward", fwdBwd(model, 1, 6, 7))
	for _, id := range []string{op, fb2, fb1} {
		h.ok(keyA, id)
	}
	assert.Equal(t, []string{"forward_backward", "forward_backward", "optim_step"}, h.be.Trainer(model).Calls())
	log := h.srv.StepLog(model)
	require.Len(t, log, 3)
	assert.Equal(t, []int64{1, 2, 3}, []int64{log[0].Seq, log[1].Seq, log[2].Seq})
	theta, _ := h.be.Trainer(model).State()
	assert.InDelta(t, 3.0, theta, 1e-12, "both passes (3 tokens) counted before the step")
}

func TestIdempotentRetryAppliesOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	model := h.model(keyA, h.session(keyA), 0)
	h.ok(keyA, h.submit(keyA, "forward_backward", fwdBwd(model, 1, 4)))

	// The same call retried with the same idempotency key, and again
	// concurrently: one future, one application.
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Go(func() {
			ids[i] = h.submit(keyA, "optim_step", optim(model, 2, 1), "X-Idempotency-Key", "retry-me")
		})
	}
	wg.Wait()
	for _, id := range ids[1:] {
		assert.Equal(t, ids[0], id)
	}
	h.ok(keyA, ids[0])
	// A retry with a new key but the same seq_id is a duplicate too.
	assert.Equal(t, ids[0], h.submit(keyA, "optim_step", optim(model, 2, 1), "X-Idempotency-Key", "other"))
	_, v := h.be.Trainer(model).State()
	assert.Equal(t, policy.Version(1), v)
	assert.Equal(t, []string{"forward_backward", "optim_step"}, h.be.Trainer(model).Calls())

	// create_model retried (same session, same model_seq_id) makes one model.
	sess := h.session(keyA)
	a := h.submit(keyA, "create_model", fmt.Sprintf(`{"session_id":%q,"model_seq_id":0,"base_model":%q}`, sess, base))
	b := h.submit(keyA, "create_model", fmt.Sprintf(`{"session_id":%q,"model_seq_id":0,"base_model":%q}`, sess, base))
	assert.Equal(t, a, b)
}

func TestBadBodyUsesUpItsSeqID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	model := h.model(keyA, h.session(keyA), 0)
	status, _ := h.call(keyA, http.MethodPost, "forward_backward",
		fmt.Sprintf(`{"model_id":%q,"seq_id":1,"forward_backward_input":{"loss_fn":"nope","data":[]}}`, model))
	require.Equal(t, http.StatusBadRequest, status)
	// seq 2 is not held up waiting for seq 1.
	h.ok(keyA, h.submit(keyA, "optim_step", optim(model, 2, 1)))
	log := h.srv.StepLog(model)
	require.Len(t, log, 2)
	assert.Equal(t, server.StepRejected, log[0].Status)
	assert.Equal(t, server.StepApplied, log[1].Status)
}

func TestParkedCallTimesOut(t *testing.T) {
	t.Parallel()
	// seq_id 1 never comes, so any SeqWait is the right one to expire.
	h := newHarness(t, func(c *server.Config) { c.SeqWait = time.Millisecond })
	model := h.model(keyA, h.session(keyA), 0)
	id := h.submit(keyA, "optim_step", optim(model, 2, 1))
	r := h.result(keyA, id)
	require.NotNil(t, r.Failed)
	assert.Contains(t, r.Failed.Error, "waited for seq_id 1")
	assert.Contains(t, r.Failed.Error, "within 1ms")
	assert.Equal(t, wire.ErrorCategoryUser, r.Failed.Category)
	assert.Empty(t, h.be.Trainer(model).Calls())
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *server.Config) { c.SessionTTL = time.Minute })
	sess := h.session(keyA)
	model := h.model(keyA, sess, 0)
	h.clock.Advance(50 * time.Second)
	h.post(keyA, "session_heartbeat", fmt.Sprintf(`{"session_id":%q}`, sess))
	h.clock.Advance(50 * time.Second)
	h.ok(keyA, h.submit(keyA, "forward_backward", fwdBwd(model, 1, 1)))
	h.clock.Advance(61 * time.Second)
	status, body := h.call(keyA, http.MethodPost, "session_heartbeat", fmt.Sprintf(`{"session_id":%q}`, sess))
	assert.Equal(t, http.StatusNotFound, status, "%s", body)
	status, _ = h.call(keyA, http.MethodPost, "optim_step", optim(model, 2, 1))
	assert.Equal(t, http.StatusNotFound, status)
}

func TestFutureExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *server.Config) { c.FutureTTL = time.Minute })
	model := h.model(keyA, h.session(keyA), 0)
	id := h.submit(keyA, "forward_backward", fwdBwd(model, 1, 1))
	h.ok(keyA, id)
	h.clock.Advance(2 * time.Minute)
	status, body := h.call(keyA, http.MethodPost, "retrieve_future", fmt.Sprintf(`{"request_id":%q}`, id))
	assert.Equal(t, http.StatusGone, status)
	assert.Contains(t, string(body), "expired")
}

func TestBackPressure(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	h := newHarnessWith(t, func(c *server.Config) { c.MaxInFlight = 1 }, func(o *server.Options) {
		o.Backend = &servertest.Backend{Gate: gate}
	})
	body := `{"base_model":"tiny-base","prompt":{"chunks":[{"tokens":[1]}]},"sampling_params":{"max_tokens":1}}`
	first := h.submit(keyA, "asample", body)
	status, out := h.call(keyA, http.MethodPost, "asample", body)
	assert.Equal(t, http.StatusTooManyRequests, status, "%s", out)
	close(gate)
	h.ok(keyA, first)
	h.ok(keyA, h.submit(keyA, "asample", body))
}

func TestTryAgainWhileRunning(t *testing.T) {
	t.Parallel()
	// The gated call cannot finish before the poll ends, so any PollWait
	// is the right one to answer try_again.
	gate := make(chan struct{})
	h := newHarnessWith(t, func(c *server.Config) { c.PollWait = time.Millisecond }, func(o *server.Options) {
		o.Backend = &servertest.Backend{Gate: gate}
	})
	id := h.submit(keyA, "asample", `{"base_model":"tiny-base","prompt":{"chunks":[{"tokens":[1]}]},"sampling_params":{"max_tokens":1}}`)
	r, err := wire.DecodeFutureResult(h.post(keyA, "retrieve_future", fmt.Sprintf(`{"request_id":%q}`, id)))
	require.NoError(t, err)
	require.NotNil(t, r.TryAgain)
	assert.Equal(t, id, r.TryAgain.RequestID)
	assert.Equal(t, wire.QueueActive, r.TryAgain.QueueState)
	close(gate)
	h.ok(keyA, id)
}

func TestBackendFailureIsAFailedFuture(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.be.Fail = func(kind string) error {
		if kind == "optim_step" {
			return fmt.Errorf("optimizer exploded")
		}
		return nil
	}
	model := h.model(keyA, h.session(keyA), 0)
	r := h.result(keyA, h.submit(keyA, "optim_step", optim(model, 1, 1)))
	require.NotNil(t, r.Failed)
	assert.Contains(t, r.Failed.Error, "optimizer exploded")
	log := h.srv.StepLog(model)
	require.Len(t, log, 1)
	assert.Equal(t, server.StepFailed, log[0].Status)
	assert.Equal(t, policy.Version(0), log[0].Version)
}

func TestSaveLoadStateAndListing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sess := h.session(keyA)
	model := h.model(keyA, sess, 0)
	h.ok(keyA, h.submit(keyA, "forward_backward", fwdBwd(model, 1, 1, 2)))
	h.ok(keyA, h.submit(keyA, "optim_step", optim(model, 2, 1)))
	pr, err := wire.DecodePathResponse(h.ok(keyA, h.submit(keyA, "save_weights", fmt.Sprintf(`{"model_id":%q,"path":"ckpt","seq_id":3}`, model))), true)
	require.NoError(t, err)
	assert.Equal(t, "tinker://"+model+"/weights/ckpt", pr.Path)

	other := h.model(keyA, sess, 1)
	h.ok(keyA, h.submit(keyA, "load_weights", fmt.Sprintf(`{"model_id":%q,"path":%q,"seq_id":1,"optimizer":true}`, other, pr.Path)))
	theta, v := h.be.Trainer(other).State()
	assert.Equal(t, policy.Version(1), v)
	assert.InDelta(t, 2.0, theta, 1e-12)
	assert.True(t, h.be.Trainer(other).LoadedOptimizer())
	assert.Equal(t, policy.Version(1), h.srv.StepLog(other)[0].Version)

	// Ephemeral save: a sampling session instead of a path.
	es, err := wire.DecodePathResponse(h.ok(keyA, h.submit(keyA, "save_weights_for_sampler", fmt.Sprintf(`{"model_id":%q,"seq_id":4,"sampling_session_seq_id":0}`, model))), false)
	require.NoError(t, err)
	assert.Empty(t, es.Path)
	require.NotEmpty(t, es.SamplingSessionID)
	sr, err := wire.DecodeSampleResponse(h.ok(keyA, h.submit(keyA, "asample", fmt.Sprintf(`{"sampling_session_id":%q,"seq_id":0,"prompt":{"chunks":[{"tokens":[3]}]},"sampling_params":{"max_tokens":1}}`, es.SamplingSessionID))))
	require.NoError(t, err)
	assert.Equal(t, int64(1), *sr.PolicyVersion)

	status, body := h.call(keyA, http.MethodGet, "training_runs/"+model+"/checkpoints", nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	assert.Contains(t, string(body), `"checkpoint_id":"weights/ckpt"`)
	assert.Contains(t, string(body), `"checkpoint_type":"training"`)
	status, body = h.call(keyA, http.MethodGet, "training_runs?limit=1&offset=0", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), `"total_count":2`)
	status, body = h.call(keyA, http.MethodGet, "training_runs/"+model, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), `"last_checkpoint":{"checkpoint_id":"weights/ckpt"`)
	status, _ = h.call(keyA, http.MethodGet, "training_runs/"+model+"/checkpoints/weights/ckpt/archive", nil)
	assert.Equal(t, http.StatusNotFound, status, "no store, no archive")
}

func TestRoles(t *testing.T) {
	t.Parallel()
	tr := newHarness(t, func(c *server.Config) { c.Role = server.RoleTrainer })
	status, body := tr.call(keyA, http.MethodPost, "asample", `{}`)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(body), "role is trainer")
	sp := newHarness(t, func(c *server.Config) { c.Role = server.RoleSampler })
	status, body = sp.call(keyA, http.MethodPost, "create_model", `{}`)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(body), "role is sampler")
	sp.post(keyA, "session_heartbeat", fmt.Sprintf(`{"session_id":%q}`, sp.session(keyA)))
}

func TestHealthAndCapabilities(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	status, body := h.call("", http.MethodGet, "healthz", nil)
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"status":"ok"}`, string(body))
	status, body = h.call(keyA, http.MethodGet, "get_server_capabilities", nil)
	require.Equal(t, http.StatusOK, status)
	caps, err := wire.DecodeGetServerCapabilitiesResponse(body)
	require.NoError(t, err)
	assert.Equal(t, []wire.SupportedModel{{ModelName: base, MaxContextLength: 512}}, caps.SupportedModels)
	h.post(keyA, "telemetry", `{"events":[],"platform":"linux","sdk_version":"0.3.0","session_id":"x"}`)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := server.Config{APIKeys: []string{keyA}}
	require.NoError(t, ok.Validate())
	d := server.DefaultConfig()
	assert.Equal(t, "127.0.0.1:8000", d.Addr, "loopback by default")
	cases := map[string]func(*server.Config){
		"no key":        func(c *server.Config) { c.APIKeys = nil },
		"short key":     func(c *server.Config) { c.APIKeys = []string{"abc"} },
		"bad role":      func(c *server.Config) { c.Role = "chef" },
		"bad addr":      func(c *server.Config) { c.Addr = "nowhere" },
		"negative ttl":  func(c *server.Config) { c.SessionTTL = -1 },
		"unnamed model": func(c *server.Config) { c.Models = []server.ModelSpec{{}} },
	}
	for name, mod := range cases {
		c := ok
		mod(&c)
		err := c.Validate()
		assert.ErrorIs(t, err, server.ErrConfig, name)
	}
	_, err := server.New(ok, server.Options{})
	assert.ErrorContains(t, err, "no backend")
}

func TestIdempotencyKeyReusedForAnotherBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	model := h.model(keyA, h.session(keyA), 0)
	h.submit(keyA, "optim_step", optim(model, 1, 1), "X-Idempotency-Key", "k1")
	status, body := h.call(keyA, http.MethodPost, "optim_step", optim(model, 2, 1), "X-Idempotency-Key", "k1")
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, string(body), "different optim_step body")
	// Keys are per tenant: key B may use the same key for its own call.
	modelB := h.model(keyB, h.session(keyB), 0)
	h.submit(keyB, "optim_step", optim(modelB, 1, 1), "X-Idempotency-Key", "k1")
}

func TestResultsKeptAreBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *server.Config) { c.MaxResults = 2 })
	model := h.model(keyA, h.session(keyA), 0)
	first := h.submit(keyA, "forward_backward", fwdBwd(model, 1, 1))
	h.ok(keyA, first)
	for seq := 2; seq <= 3; seq++ {
		h.ok(keyA, h.submit(keyA, "forward_backward", fwdBwd(model, seq, 1)))
	}
	status, _ := h.call(keyA, http.MethodPost, "retrieve_future", fmt.Sprintf(`{"request_id":%q}`, first))
	assert.Equal(t, http.StatusGone, status, "the oldest result made room")
}

func TestUnloadFailsParkedCalls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	model := h.model(keyA, h.session(keyA), 0)
	parked := h.submit(keyA, "optim_step", optim(model, 2, 1))
	h.ok(keyA, h.submit(keyA, "unload_model", fmt.Sprintf(`{"model_id":%q}`, model)))
	r := h.result(keyA, parked)
	require.NotNil(t, r.Failed)
	assert.Contains(t, r.Failed.Error, "unloaded")
	status, _ := h.call(keyA, http.MethodPost, "forward_backward", fwdBwd(model, 1, 1))
	assert.Equal(t, http.StatusNotFound, status)
}

func TestStoreBackedCheckpoints(t *testing.T) {
	t.Parallel()
	store := &servertest.Store{ArchiveBase: "https://downloads.invalid"}
	be := &servertest.Backend{}
	mk := func(role server.Role) *harness {
		return newHarnessWith(t, func(c *server.Config) { c.Role = role }, func(o *server.Options) {
			o.Backend, o.Store = be, store
		})
	}
	tr, sp := mk(server.RoleTrainer), mk(server.RoleSampler)
	model := tr.model(keyA, tr.session(keyA), 0)
	tr.ok(keyA, tr.submit(keyA, "save_weights_for_sampler", fmt.Sprintf(`{"model_id":%q,"path":"s1","seq_id":1}`, model)))
	path := "tinker://" + model + "/sampler_weights/s1"

	// The sampler server resolves the trainer server's checkpoint through the store.
	body := fmt.Sprintf(`{"model_path":%q,"prompt":{"chunks":[{"tokens":[1]}]},"sampling_params":{"max_tokens":1}}`, path)
	sp.ok(keyA, sp.submit(keyA, "asample", body))
	status, _ := sp.call(keyB, http.MethodPost, "asample", body)
	assert.Equal(t, http.StatusNotFound, status, "another key cannot use it")

	// Listing on the sampler server comes from the store; archive answers 302.
	status, out := sp.call(keyA, http.MethodGet, "training_runs/"+model+"/checkpoints", nil)
	require.Equal(t, http.StatusOK, status, "%s", out)
	assert.Contains(t, string(out), path)
	req, err := http.NewRequest(http.MethodGet, tr.hs.URL+"/api/v1/training_runs/"+model+"/checkpoints/sampler_weights/s1/archive", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", keyA)
	cl := *tr.hs.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := cl.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	assert.Equal(t, "https://downloads.invalid/"+model+"/sampler_weights/s1.tar.gz", resp.Header.Get("Location"))
	assert.NotEmpty(t, resp.Header.Get("Expires"))

	// Deleting it (as the SDK's delete_checkpoint does) removes it everywhere.
	status, _ = sp.call(keyB, http.MethodDelete, "training_runs/"+model+"/checkpoints/sampler_weights/s1", nil)
	assert.Equal(t, http.StatusNotFound, status, "not key B's to delete")
	status, out = tr.call(keyA, http.MethodDelete, "training_runs/"+model+"/checkpoints/sampler_weights/s1", nil)
	require.Equal(t, http.StatusNoContent, status, "%s", out)
	status, _ = sp.call(keyA, http.MethodPost, "asample", body)
	assert.Equal(t, http.StatusNotFound, status)
}

func TestBearerAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	status, _ := h.call("", http.MethodPost, "create_session", `{}`, "Authorization", "Bearer "+keyB)
	assert.Equal(t, http.StatusOK, status)
	status, _ = h.call("", http.MethodPost, "create_session", `{}`, "Authorization", "Bearer wrong-key-000")
	assert.Equal(t, http.StatusUnauthorized, status)
	// Baseten Loops documents Api-Key <key> for direct callers.
	status, _ = h.call("", http.MethodPost, "create_session", `{}`, "Authorization", "Api-Key "+keyB)
	assert.Equal(t, http.StatusOK, status)
	status, _ = h.call("", http.MethodPost, "create_session", `{}`, "Authorization", "api-key wrong-key-000")
	assert.Equal(t, http.StatusUnauthorized, status)
}

func TestStepLogObserverAndEndpoint(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []server.StepEntry
	h := newHarnessWith(t, nil, func(o *server.Options) {
		o.OnStep = func(_ string, e server.StepEntry) {
			mu.Lock()
			seen = append(seen, e)
			mu.Unlock()
		}
	})
	model := h.model(keyA, h.session(keyA), 0)
	status, _ := h.call(keyA, http.MethodPost, "optim_step", fmt.Sprintf(`{"model_id":%q,"seq_id":1,"adam_params":{"eps":-1}}`, model))
	require.Equal(t, http.StatusBadRequest, status)
	h.ok(keyA, h.submit(keyA, "forward_backward", fwdBwd(model, 2, 1)))
	h.ok(keyA, h.submit(keyA, "optim_step", optim(model, 3, 1)))

	status, body := h.call(keyA, http.MethodGet, "training_runs/"+model+"/step_log", nil)
	require.Equal(t, http.StatusOK, status)
	var got server.StepLogResponse
	require.NoError(t, json.Unmarshal(body, &got))
	assert.Equal(t, h.srv.StepLog(model), got.Steps)
	mu.Lock()
	assert.Equal(t, got.Steps, seen, "the observer saw every entry, in order, in its final state")
	mu.Unlock()
	status, _ = h.call(keyB, http.MethodGet, "training_runs/"+model+"/step_log", nil)
	assert.Equal(t, http.StatusNotFound, status)
}

func TestUnknownCheckpointDoesNotStall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	model := h.model(keyA, h.session(keyA), 0)
	status, _ := h.call(keyA, http.MethodPost, "load_weights", fmt.Sprintf(`{"model_id":%q,"seq_id":1,"path":"tinker://%s/weights/missing"}`, model, model))
	require.Equal(t, http.StatusNotFound, status)
	h.ok(keyA, h.submit(keyA, "optim_step", optim(model, 2, 1)))
	log := h.srv.StepLog(model)
	require.Len(t, log, 2)
	assert.Equal(t, server.StepRejected, log[0].Status)
	assert.Contains(t, log[0].Error, "not found")
}
