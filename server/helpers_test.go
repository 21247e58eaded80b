package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/tandemrl/tandem/server"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	keyA = "key-a-0123456789"
	keyB = "key-b-0123456789"
	base = "tiny-base"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// harness is a server over the fake backend behind httptest.
type harness struct {
	t     *testing.T
	srv   *server.Server
	hs    *httptest.Server
	be    *servertest.Backend
	clock *clock
}

func newHarness(t *testing.T, mod func(*server.Config)) *harness {
	t.Helper()
	return newHarnessWith(t, mod, nil)
}

// newHarnessWith also lets the test change the server's Options.
func newHarnessWith(t *testing.T, mod func(*server.Config), opts func(*server.Options)) *harness {
	t.Helper()
	// PollWait only paces polling (a poll that ends early answers
	// try_again and is polled again), so its value decides no outcome.
	// SeqWait expiring would: a test that sends seq_ids out of order must
	// not see the early ones time out however slow the machine, so it is
	// longer than go test's own -timeout; the test of that expiry sets its own.
	cfg := server.Config{
		APIKeys:  []string{keyA, keyB},
		Models:   []server.ModelSpec{{Name: base, VocabSize: servertest.Vocab, MaxContextLength: 512}},
		PollWait: 200 * time.Millisecond,
		SeqWait:  time.Hour,
	}
	if mod != nil {
		mod(&cfg)
	}
	h := &harness{t: t, be: &servertest.Backend{}, clock: &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	o := server.Options{Backend: h.be, Now: h.clock.Now}
	if opts != nil {
		opts(&o)
	}
	if b, ok := o.Backend.(*servertest.Backend); ok {
		h.be = b
	}
	srv, err := server.New(cfg, o)
	require.NoError(t, err)
	h.srv = srv
	h.hs = httptest.NewServer(srv)
	t.Cleanup(func() {
		h.hs.Close()
		require.NoError(t, srv.Close(context.Background()))
	})
	return h
}

// call POSTs body (a string or a value to encode) with key and returns status and body.
func (h *harness) call(key, method, endpoint string, body any, headers ...string) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		require.NoError(h.t, err)
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, h.hs.URL+"/api/v1/"+endpoint, rd)
	require.NoError(h.t, err)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.hs.Client().Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, out
}

// post POSTs and requires a 200, returning the body.
func (h *harness) post(key, endpoint string, body any, headers ...string) []byte {
	h.t.Helper()
	status, out := h.call(key, http.MethodPost, endpoint, body, headers...)
	require.Equal(h.t, http.StatusOK, status, "%s: %s", endpoint, out)
	return out
}

// submit POSTs a call answered with a future and returns its request id.
func (h *harness) submit(key, endpoint string, body any, headers ...string) string {
	h.t.Helper()
	f, err := wire.DecodeUntypedAPIFuture(h.post(key, endpoint, body, headers...))
	require.NoError(h.t, err)
	return f.RequestID
}

// result polls request id until it is done and returns the raw result.
// It sets no deadline of its own: a call that never finishes is reported by
// go test's -timeout, with every goroutine's stack.
func (h *harness) result(key, id string) wire.FutureResult {
	h.t.Helper()
	for {
		r, err := wire.DecodeFutureResult(h.post(key, "retrieve_future", map[string]string{"request_id": id}))
		require.NoError(h.t, err)
		if r.TryAgain == nil {
			return r
		}
	}
}

// ok polls id and requires success.
func (h *harness) ok(key, id string) []byte {
	h.t.Helper()
	r := h.result(key, id)
	require.Nil(h.t, r.Failed, "request %s failed: %+v", id, r.Failed)
	return r.Result
}

func (h *harness) session(key string) string {
	h.t.Helper()
	r, err := wire.DecodeCreateSessionResponse(h.post(key, "create_session", `{"tags":[],"user_metadata":{},"sdk_version":"0.3.0"}`))
	require.NoError(h.t, err)
	return r.SessionID
}

func (h *harness) model(key, session string, seq int) string {
	h.t.Helper()
	id := h.submit(key, "create_model", fmt.Sprintf(`{"session_id":%q,"model_seq_id":%d,"base_model":%q,"lora_config":{"rank":8}}`, session, seq, base))
	r, err := wire.DecodeCreateModelResponse(h.ok(key, id))
	require.NoError(h.t, err)
	return r.ModelID
}

func fwdBwd(model string, seq int, tokens ...int) string {
	toks, _ := json.Marshal(tokens)
	targets := make([]int, len(tokens))
	for i := range tokens {
		targets[i] = tokens[i] + 1
	}
	tg, _ := json.Marshal(targets)
	return fmt.Sprintf(`{"model_id":%q,"seq_id":%d,"forward_backward_input":{"loss_fn":"cross_entropy","data":[
		{"model_input":{"chunks":[{"tokens":%s}]},"loss_fn_inputs":{"target_tokens":{"data":%s,"dtype":"int64"}}}]}}`,
		model, seq, toks, tg)
}

func optim(model string, seq int, lr float64) string {
	return fmt.Sprintf(`{"model_id":%q,"seq_id":%d,"adam_params":{"learning_rate":%g}}`, model, seq, lr)
}
