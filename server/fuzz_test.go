package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

var fuzzEndpoints = []string{
	"create_session", "session_heartbeat", "create_model", "forward", "forward_backward",
	"optim_step", "save_weights", "save_weights_for_sampler", "load_weights",
	"create_sampling_session", "asample", "retrieve_future", "get_info", "unload_model", "telemetry", "client/config", "weights_info",
}

// FuzzEndpoints posts arbitrary bodies to every endpoint of a live server
// with a session and a model ($S and $M in the input are replaced by their
// ids). The server must never answer 5xx or non-JSON, nor panic.
func FuzzEndpoints(f *testing.F) {
	seeds := []string{
		`{"session_id":"$S"}`,
		`{"session_id":"$S","model_seq_id":9,"base_model":"tiny-base","lora_config":{"rank":2}}`,
		`{"model_id":"$M","seq_id":1,"forward_backward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"tokens":[1]}]},"loss_fn_inputs":{"target_tokens":{"data":[2],"dtype":"int64"}}}]}}`,
		`{"model_id":"$M","seq_id":2,"adam_params":{"learning_rate":0.1}}`,
		`{"model_id":"$M","path":"p1","seq_id":3}`,
		`{"model_id":"$M","path":"tinker://$M/weights/p1","seq_id":4}`,
		`{"session_id":"$S","sampling_session_seq_id":1,"model_path":"tinker://$M/sampler_weights/p1"}`,
		`{"base_model":"tiny-base","prompt":{"chunks":[{"tokens":[1]}]},"sampling_params":{"max_tokens":2,"stop":"x"}}`,
		`{"request_id":"req-0"}`, `{"model_id":"$M"}`, `{}`, `[]`, ``,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	// Short waits make parked calls expire and polls return while the
	// fuzzer runs; the checks (no 5xx, JSON answers) hold whichever comes first.
	cfg := server.Config{APIKeys: []string{keyA}, PollWait: time.Millisecond, SeqWait: 10 * time.Millisecond,
		Models: []server.ModelSpec{{Name: base, VocabSize: servertest.Vocab, MaxContextLength: 64}}}
	srv, err := server.New(cfg, server.Options{Backend: &servertest.Backend{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			f.Error(err)
		}
	})
	post := func(endpoint string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/"+endpoint, bytes.NewReader(body))
		req.Header.Set("X-API-Key", keyA)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w
	}
	cs, _ := wire.DecodeCreateSessionResponse(post("create_session", []byte(`{}`)).Body.Bytes())
	fut, _ := wire.DecodeUntypedAPIFuture(post("create_model", []byte(`{"session_id":"`+cs.SessionID+`","model_seq_id":0,"base_model":"tiny-base"}`)).Body.Bytes())
	// Poll until the model exists, however long that takes (PollWait only
	// paces the polls; go test's -timeout reports a model that never comes).
	var modelID string
	for modelID == "" {
		r, err := wire.DecodeFutureResult(post("retrieve_future", []byte(`{"request_id":"`+fut.RequestID+`"}`)).Body.Bytes())
		switch {
		case err != nil:
			f.Fatal(err)
		case r.Failed != nil:
			f.Fatalf("create_model failed: %+v", r.Failed)
		case r.TryAgain == nil:
			m, err := wire.DecodeCreateModelResponse(r.Result)
			if err != nil {
				f.Fatal(err)
			}
			modelID = m.ModelID
		}
	}
	f.Fuzz(func(t *testing.T, pick uint8, body []byte) {
		ep := fuzzEndpoints[int(pick)%len(fuzzEndpoints)]
		b := strings.ReplaceAll(strings.ReplaceAll(string(body), "$S", cs.SessionID), "$M", modelID)
		w := post(ep, []byte(b))
		if w.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", ep, b, w.Code, w.Body.String())
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %q: answer is not JSON: %q", ep, b, w.Body.String())
		}
	})
}
