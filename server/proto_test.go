package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/wire"
)

// protoPost POSTs a protobuf body and returns the future's request id.
func (h *harness) protoPost(endpoint string, body []byte) string {
	h.t.Helper()
	return h.submit(keyA, endpoint, body, "Content-Type", wire.ContentTypeProto)
}

// protoResult polls id with Accept: application/x-protobuf until it is
// done, and returns the answer's content type and body.
func (h *harness) protoResult(id string) (string, []byte) {
	h.t.Helper()
	for {
		req, err := http.NewRequest(http.MethodPost, h.hs.URL+"/api/v1/retrieve_future", bytes.NewBufferString(fmt.Sprintf(`{"request_id":%q}`, id)))
		require.NoError(h.t, err)
		req.Header.Set("X-API-Key", keyA)
		req.Header.Set("Accept", wire.ContentTypeProto)
		resp, err := h.hs.Client().Do(req)
		require.NoError(h.t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(h.t, err)
		require.Equal(h.t, http.StatusOK, resp.StatusCode, "%s", body)
		ct := resp.Header.Get("Content-Type")
		if ct == wire.ContentTypeProto || !bytes.Contains(body, []byte(`"try_again"`)) {
			return ct, body
		}
	}
}

// The SDK v0.25's wire format: forward_backward (and forward, as
// forward_only) in protobuf, and results in protobuf when the poll's Accept
// asks for them — sample, forward and forward_backward results; other
// results, errors and try_again stay JSON. The answers equal the JSON
// path's.
func TestProtobufCalls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sess := h.session(keyA)
	model := h.model(keyA, sess, 0)
	datum := rl.Datum{ModelInput: rl.Tokens([]int{10, 20, 30}),
		LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{11, 21, 31})}}
	seq := func(n int64) *int64 { return &n }
	fwd := wire.ForwardBackwardRequest{ModelID: model, SeqID: seq(1), Forward: true,
		Input: wire.ForwardBackwardInput{Data: []rl.Datum{datum}, Loss: rl.Loss{Name: rl.CrossEntropy}}}
	body, err := fwd.MarshalProto()
	require.NoError(t, err)
	ct, raw := h.protoResult(h.protoPost("forward_backward", body))
	require.Equal(t, wire.ContentTypeProto, ct)
	out, err := wire.DecodeForwardBackwardOutputProto(raw)
	require.NoError(t, err)
	require.Len(t, out.LossFnOutputs, 1)
	lp := out.LossFnOutputs[0]["logprobs"].Floats
	require.Len(t, lp, 3)

	// The same datum through JSON, then a protobuf forward_backward.
	jsonOut, err := wire.DecodeForwardBackwardOutput(h.ok(keyA, h.submit(keyA, "forward", fmt.Sprintf(
		`{"model_id":%q,"seq_id":2,"forward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"tokens":[10,20,30]}]},"loss_fn_inputs":{"target_tokens":{"data":[11,21,31],"dtype":"int64"}}}]}}`, model))))
	require.NoError(t, err)
	assert.InDeltaSlice(t, jsonOut.LossFnOutputs[0]["logprobs"].Floats, lp, 1e-6, "protobuf answers carry float32")
	fb := fwd
	fb.SeqID, fb.Forward = seq(3), false
	body, err = fb.MarshalProto()
	require.NoError(t, err)
	_, raw = h.protoResult(h.protoPost("forward_backward", body))
	_, err = wire.DecodeForwardBackwardOutputProto(raw)
	require.NoError(t, err)
	assert.Equal(t, []string{"forward", "forward", "forward_backward"}, h.be.Trainer(model).Calls(), "forward_only is a forward: no gradients")

	// optim_step's result has no protobuf form: JSON, whatever Accept says.
	ct, raw = h.protoResult(h.submit(keyA, "optim_step", optim(model, 4, 0.5)))
	assert.Equal(t, "application/json", ct)
	_, err = wire.DecodeOptimStepResponse(raw)
	require.NoError(t, err)

	// A sample with prompt log-probs: the first is null (NaN on the wire).
	ss, err := wire.DecodeCreateSamplingSessionResponse(h.post(keyA, "create_sampling_session",
		fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":0,"base_model":%q}`, sess, base)))
	require.NoError(t, err)
	sample := fmt.Sprintf(`{"sampling_session_id":%q,"seq_id":0,"num_samples":2,"prompt":{"chunks":[{"tokens":[1,2,3]}]},
		"sampling_params":{"max_tokens":4,"seed":5},"prompt_logprobs":true}`, ss.SamplingSessionID)
	ct, raw = h.protoResult(h.submit(keyA, "asample", sample))
	require.Equal(t, wire.ContentTypeProto, ct)
	sr, err := wire.DecodeSampleResponseProto(raw)
	require.NoError(t, err)
	want, err := wire.DecodeSampleResponse(h.ok(keyA, h.submit(keyA, "asample", sample)))
	require.NoError(t, err)
	require.Len(t, sr.Sequences, 2)
	assert.Equal(t, want.Sequences[0].Tokens, sr.Sequences[0].Tokens)
	require.Len(t, sr.PromptLogprobs, 3)
	assert.Nil(t, sr.PromptLogprobs[0])
	require.NotNil(t, sr.PromptLogprobs[1])
	assert.InDelta(t, *want.PromptLogprobs[1], *sr.PromptLogprobs[1], 1e-6)

	// A failed call's error stays JSON.
	bad := fwd
	bad.ModelID, bad.SeqID = "no-such-model", nil
	body, err = bad.MarshalProto()
	require.NoError(t, err)
	status, msg := h.call(keyA, http.MethodPost, "forward_backward", body, "Content-Type", wire.ContentTypeProto)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(msg), "no-such-model")
}

// A protobuf forward_backward refused for its body uses up its seq_id, as
// a JSON one does (TestBadBodyUsesUpItsSeqID): the next call is not held up.
func TestBadProtobufBodyUsesUpItsSeqID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	model := h.model(keyA, h.session(keyA), 0)
	seq := int64(1)
	bad := wire.ForwardBackwardRequest{ModelID: model, SeqID: &seq, Input: wire.ForwardBackwardInput{
		Data: []rl.Datum{{ModelInput: rl.Tokens([]int{1, 2}),
			LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{2, 3})}}},
		Loss: rl.Loss{Name: rl.CrossEntropy}}}
	body, err := bad.MarshalProto()
	require.NoError(t, err)
	body = append(body, 0xff) // a broken field after model_id and seq_id
	status, msg := h.call(keyA, http.MethodPost, "forward_backward", body, "Content-Type", wire.ContentTypeProto)
	require.Equal(t, http.StatusBadRequest, status, "%s", msg)
	h.ok(keyA, h.submit(keyA, "optim_step", optim(model, 2, 1)))
	log := h.srv.StepLog(model)
	require.Len(t, log, 2)
	assert.Equal(t, server.StepRejected, log[0].Status)
	assert.Equal(t, server.StepApplied, log[1].Status)
}
