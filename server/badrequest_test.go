package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/wire"
)

// TestBadRequests sends malformed, unauthorized and out-of-bounds calls and
// checks each gets the right status and a message naming the problem.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *server.Config) { c.MaxBodyBytes = 4096 })
	sess := h.session(keyA)
	model := h.model(keyA, sess, 0)
	h.ok(keyA, h.submit(keyA, "save_weights_for_sampler", fmt.Sprintf(`{"model_id":%q,"path":"s1","seq_id":1}`, model)))
	samplerPath := "tinker://" + model + "/sampler_weights/s1"
	sessB := h.session(keyB)
	ssA, err := wire.DecodeCreateSamplingSessionResponse(h.post(keyA, "create_sampling_session",
		fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":0,"model_path":%q}`, sess, samplerPath)))
	require.NoError(t, err)
	futA := h.submit(keyA, "forward", fmt.Sprintf(`{"model_id":%q,"seq_id":2,"forward_input":{"loss_fn":"cross_entropy","data":[]}}`, model))

	fb := func(data string) string {
		return fmt.Sprintf(`{"model_id":%q,"forward_backward_input":{"loss_fn":"cross_entropy","data":[%s]}}`, model, data)
	}
	datum := func(tokens, targets string) string {
		return fmt.Sprintf(`{"model_input":{"chunks":[{"tokens":%s}]},"loss_fn_inputs":{"target_tokens":{"data":%s,"dtype":"int64"}}}`, tokens, targets)
	}
	sample := func(extra string) string {
		return `{"base_model":"tiny-base","prompt":{"chunks":[{"tokens":[1,2]}]},"sampling_params":{"max_tokens":4}` + extra + `}`
	}

	cases := []struct {
		name     string
		key      string // keyA unless set; "-" sends none
		method   string // POST unless set
		endpoint string
		body     string
		headers  []string
		status   int
		says     string
	}{
		{name: "no key", key: "-", endpoint: "create_session", body: `{}`, status: 401, says: "missing API key"},
		{name: "wrong key", key: "wrong-key-123456", endpoint: "create_session", body: `{}`, status: 401, says: "not accepted"},
		{name: "basic auth", key: "-", endpoint: "create_session", body: `{}`, headers: []string{"Authorization", "Basic abc"}, status: 401, says: "want Bearer"},
		{name: "not json", endpoint: "create_session", body: `{"tags":`, status: 400, says: "invalid JSON"},
		{name: "protobuf elsewhere", endpoint: "optim_step", body: "\x0a\x1e", headers: []string{"Content-Type", "application/x-protobuf"}, status: 415, says: "protobuf is read by forward and forward_backward"},
		{name: "truncated protobuf", endpoint: "forward_backward", body: "\x0a\x1e", headers: []string{"Content-Type", "application/x-protobuf"}, status: 400, says: "model_id"},
		{name: "zstd body", endpoint: "create_session", body: `{}`, headers: []string{"Content-Encoding", "zstd"}, status: 415, says: "uncompressed"},
		{name: "bad content type", endpoint: "create_session", body: `{}`, headers: []string{"Content-Type", "a/b/c"}, status: 415, says: "does not parse"},
		{name: "body is a list", endpoint: "optim_step", body: `[]`, status: 400, says: "want a JSON object"},
		{name: "oversized body", endpoint: "forward_backward", body: `{"pad":"` + strings.Repeat("x", 5000) + `"}`, status: 413, says: "larger than 4096 bytes"},
		{name: "unknown endpoint", endpoint: "make_coffee", body: `{}`, status: 404, says: "no endpoint"},
		{name: "heartbeat unknown session", endpoint: "session_heartbeat", body: `{"session_id":"sess-nope"}`, status: 404, says: `session "sess-nope" not found`},
		{name: "heartbeat another key's session", endpoint: "session_heartbeat", body: fmt.Sprintf(`{"session_id":%q}`, sessB), status: 404, says: "not found"},
		{name: "create_model missing base", endpoint: "create_model", body: fmt.Sprintf(`{"session_id":%q,"model_seq_id":5}`, sess), status: 400, says: "field base_model: missing"},
		{name: "create_model unknown base", endpoint: "create_model", body: fmt.Sprintf(`{"session_id":%q,"model_seq_id":5,"base_model":"gpt-9"}`, sess), status: 400, says: `"gpt-9" is not served`},
		{name: "create_model seq string", endpoint: "create_model", body: fmt.Sprintf(`{"session_id":%q,"model_seq_id":"5","base_model":"tiny-base"}`, sess), status: 400, says: "field model_seq_id: got a string, want an integer"},
		{name: "create_model rank huge", endpoint: "create_model", body: fmt.Sprintf(`{"session_id":%q,"model_seq_id":5,"base_model":"tiny-base","lora_config":{"rank":100000}}`, sess), status: 400, says: "field lora_config.rank"},
		{name: "create_model in another key's session", key: keyB, endpoint: "create_model", body: fmt.Sprintf(`{"session_id":%q,"model_seq_id":5,"base_model":"tiny-base"}`, sess), status: 404, says: "session"},
		{name: "fwdbwd unknown model", endpoint: "forward_backward", body: `{"model_id":"model-nope","forward_backward_input":{"loss_fn":"cross_entropy","data":[]}}`, status: 404, says: `model "model-nope" not found`},
		{name: "fwdbwd another key's model", key: keyB, endpoint: "forward_backward", body: fb(datum("[1]", "[2]")), status: 404, says: "not found"},
		{name: "fwdbwd unknown loss", endpoint: "forward_backward", body: fmt.Sprintf(`{"model_id":%q,"forward_backward_input":{"loss_fn":"hinge","data":[]}}`, model), status: 400, says: `unknown loss "hinge"`},
		{name: "fwdbwd data wrong type", endpoint: "forward_backward", body: fmt.Sprintf(`{"model_id":%q,"forward_backward_input":{"loss_fn":"ppo","data":"all"}}`, model), status: 400, says: "field forward_backward_input.data: got a string, want a list"},
		{name: "fwdbwd token beyond vocab", endpoint: "forward_backward", body: fb(datum("[1,1000]", "[2,3]")), status: 400, says: "token id 1000 out of range"},
		{name: "fwdbwd target beyond vocab", endpoint: "forward_backward", body: fb(datum("[1,2]", "[2,5000]")), status: 400, says: "target_tokens[1]: token id 5000"},
		{name: "fwdbwd negative token", endpoint: "forward_backward", body: fb(datum("[-1]", "[2]")), status: 400, says: "token id -1 out of range"},
		{name: "fwdbwd missing targets", endpoint: "forward_backward", body: fb(`{"model_input":{"chunks":[{"tokens":[1]}]},"loss_fn_inputs":{}}`), status: 400, says: `missing "target_tokens"`},
		{name: "fwdbwd length mismatch", endpoint: "forward_backward", body: fb(datum("[1,2]", "[2]")), status: 400, says: "1 elements, want 2"},
		{name: "fwdbwd weights NaN-ish", endpoint: "forward_backward", body: fb(`{"model_input":{"chunks":[{"tokens":[1]}]},"loss_fn_inputs":{"target_tokens":{"data":[2],"dtype":"int64"},"weights":{"data":["x"],"dtype":"float32"}}}`), status: 400, says: "want a number"},
		{name: "fwdbwd context too long", endpoint: "forward_backward", body: fb(datum("["+strings.Repeat("1,", 520)+"1]", "["+strings.Repeat("1,", 520)+"1]")), status: 400, says: "more than the 512"},
		{name: "optim bad beta", endpoint: "optim_step", body: fmt.Sprintf(`{"model_id":%q,"adam_params":{"beta2":1}}`, model), status: 400, says: "beta2 1 must be in [0, 1)"},
		{name: "optim missing adam", endpoint: "optim_step", body: fmt.Sprintf(`{"model_id":%q}`, model), status: 400, says: "field adam_params: missing"},
		{name: "optim old seq", endpoint: "optim_step", body: optim(model, 0, 1), status: 409, says: "applied long ago"},
		{name: "save traversal", endpoint: "save_weights", body: fmt.Sprintf(`{"model_id":%q,"path":"../../etc"}`, model), status: 400, says: "field path"},
		{name: "save slash", endpoint: "save_weights_for_sampler", body: fmt.Sprintf(`{"model_id":%q,"path":"a/b"}`, model), status: 400, says: "has '/'"},
		{name: "load traversal", endpoint: "load_weights", body: fmt.Sprintf(`{"model_id":%q,"path":"tinker://%s/weights/.."}`, model, model), status: 400, says: "field path"},
		{name: "load unknown checkpoint", endpoint: "load_weights", body: fmt.Sprintf(`{"model_id":%q,"path":"tinker://%s/weights/none"}`, model, model), status: 404, says: "checkpoint"},
		{name: "load sampler checkpoint", endpoint: "load_weights", body: fmt.Sprintf(`{"model_id":%q,"path":%q}`, model, samplerPath), status: 400, says: "sampler checkpoint"},
		{name: "sample another key's checkpoint", key: keyB, endpoint: "asample", body: `{"model_path":"` + samplerPath + `","prompt":{"chunks":[{"tokens":[1]}]},"sampling_params":{}}`, status: 404, says: "checkpoint"},
		{name: "sample another key's sampling session", key: keyB, endpoint: "asample", body: `{"sampling_session_id":"` + ssA.SamplingSessionID + `","prompt":{"chunks":[{"tokens":[1]}]},"sampling_params":{}}`, status: 404, says: "sampling session"},
		{name: "sample bad stop", endpoint: "asample", body: `{"base_model":"tiny-base","prompt":{"chunks":[{"tokens":[1]}]},"sampling_params":{"stop":[true]}}`, status: 400, says: "field sampling_params.stop[0]"},
		{name: "sample prompt beyond vocab", endpoint: "asample", body: `{"base_model":"tiny-base","prompt":{"chunks":[{"tokens":[1,99999]}]},"sampling_params":{}}`, status: 400, says: "field prompt[1]"},
		{name: "sample too long", endpoint: "asample", body: `{"base_model":"tiny-base","prompt":{"chunks":[{"tokens":[1]}]},"sampling_params":{"max_tokens":600}}`, status: 400, says: "exceeds the 512"},
		{name: "sample topk prompt logprobs out of range", endpoint: "asample", body: sample(`,"topk_prompt_logprobs":1025`), status: 400, says: "topk_prompt_logprobs"},
		{name: "sample image chunk", endpoint: "asample", body: `{"base_model":"tiny-base","prompt":{"chunks":[{"type":"image","data":"","format":"png"}]},"sampling_params":{}}`, status: 400, says: "not supported"},
		{name: "sampling session traversal", endpoint: "create_sampling_session", body: fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":1,"model_path":"tinker://../sampler_weights/x"}`, sess), status: 400, says: "field model_path"},
		{name: "retrieve another key's future", key: keyB, endpoint: "retrieve_future", body: fmt.Sprintf(`{"request_id":%q}`, futA), status: 404, says: "not found"},
		{name: "retrieve unknown future", endpoint: "retrieve_future", body: `{"request_id":"req-nope"}`, status: 404, says: "not found"},
		{name: "runs another key's", key: keyB, method: http.MethodGet, endpoint: "training_runs/" + model, status: 404, says: "not found"},
		{name: "checkpoints another key's", key: keyB, method: http.MethodGet, endpoint: "training_runs/" + model + "/checkpoints", status: 404, says: "not found"},
		{name: "archive traversal", method: http.MethodGet, endpoint: "training_runs/" + model + "/checkpoints/weights/..%2f..%2fetc/archive", status: 400, says: "bad tinker path"},
		{name: "runs bad limit", method: http.MethodGet, endpoint: "training_runs?limit=0", status: 400, says: "query limit"},
		{name: "long idempotency key", endpoint: "create_session", body: `{}`, headers: []string{"X-Idempotency-Key", strings.Repeat("k", 300)}, status: 400, says: "X-Idempotency-Key"},
	}
	require.GreaterOrEqual(t, len(cases), 30)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := keyA
			switch c.key {
			case "-":
				key = ""
			case "":
			default:
				key = c.key
			}
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			var body any
			if c.body != "" {
				body = c.body
			}
			status, out := h.call(key, method, c.endpoint, body, c.headers...)
			assert.Equal(t, c.status, status, "%s", out)
			var e wire.ErrorResponse
			require.NoError(t, json.Unmarshal(out, &e), "%s", out)
			assert.Contains(t, e.Error, c.says)
			assert.Equal(t, wire.ErrorCategoryUser, e.Category)
		})
	}
	// None of the bad calls reached the trainer: only the save (seq 1) and
	// the forward (seq 2) were applied.
	assert.Equal(t, []string{"save_sampler_weights", "forward"}, h.be.Trainer(model).Calls())
}

func TestUserErrorsSayDoNotRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	req, err := http.NewRequest(http.MethodPost, h.hs.URL+"/api/v1/optim_step", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", keyA)
	resp, err := h.hs.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
}
