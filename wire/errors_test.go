package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decoders maps an endpoint name to its request decoder, for tests and fuzzing.
var decoders = []struct {
	name   string
	decode func([]byte) error
}{
	{"create_session", func(b []byte) error { _, err := DecodeCreateSessionRequest(b); return err }},
	{"session_heartbeat", func(b []byte) error { _, err := DecodeSessionHeartbeatRequest(b); return err }},
	{"create_sampling_session", func(b []byte) error { _, err := DecodeCreateSamplingSessionRequest(b); return err }},
	{"create_model", func(b []byte) error { _, err := DecodeCreateModelRequest(b); return err }},
	{"forward_backward", func(b []byte) error { _, err := DecodeForwardBackwardRequest(b, false); return err }},
	{"forward", func(b []byte) error { _, err := DecodeForwardBackwardRequest(b, true); return err }},
	{"optim_step", func(b []byte) error { _, err := DecodeOptimStepRequest(b); return err }},
	{"save_weights", func(b []byte) error { _, err := DecodeSaveWeightsRequest(b); return err }},
	{"save_weights_for_sampler", func(b []byte) error { _, err := DecodeSaveWeightsForSamplerRequest(b); return err }},
	{"load_weights", func(b []byte) error { _, err := DecodeLoadWeightsRequest(b); return err }},
	{"asample", func(b []byte) error { _, err := DecodeSampleRequest(b); return err }},
	{"retrieve_future", func(b []byte) error { _, err := DecodeFutureRetrieveRequest(b); return err }},
	{"get_info", func(b []byte) error { _, err := DecodeModelRequest(b, "get_info"); return err }},
	{"training_header", func(b []byte) error { _, err := DecodeTrainingHeader(b); return err }},
	{"weights_info", func(b []byte) error { _, err := DecodeWeightsInfoRequest(b); return err }},
	// answers a client decodes
	{"untyped_future", func(b []byte) error { _, err := DecodeUntypedAPIFuture(b); return err }},
	{"create_session_response", func(b []byte) error { _, err := DecodeCreateSessionResponse(b); return err }},
	{"create_sampling_session_response", func(b []byte) error { _, err := DecodeCreateSamplingSessionResponse(b); return err }},
	{"capabilities_response", func(b []byte) error { _, err := DecodeGetServerCapabilitiesResponse(b); return err }},
	{"create_model_response", func(b []byte) error { _, err := DecodeCreateModelResponse(b); return err }},
	{"forward_backward_output", func(b []byte) error { _, err := DecodeForwardBackwardOutput(b); return err }},
	{"optim_step_response", func(b []byte) error { _, err := DecodeOptimStepResponse(b); return err }},
	{"path_response", func(b []byte) error { _, err := DecodePathResponse(b, true); return err }},
	{"sample_response", func(b []byte) error { _, err := DecodeSampleResponse(b); return err }},
	{"future_result", func(b []byte) error { _, err := DecodeFutureResult(b); return err }},
	{"weights_info_response", func(b []byte) error { _, err := DecodeWeightsInfoResponse(b); return err }},
}

func decoderByName(t *testing.T, name string) func([]byte) error {
	for _, d := range decoders {
		if d.name == name {
			return d.decode
		}
	}
	t.Fatalf("no decoder %q", name)
	return nil
}

const goodDatum = `{"model_input":{"chunks":[{"tokens":[1,2]}]},"loss_fn_inputs":{"target_tokens":{"data":[2,3],"dtype":"int64"},"weights":{"data":[1,1],"dtype":"float32"}}}`

func TestBadRequests(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, decoder, body string
		field, says         string // expected FieldError.Field and a fragment of its Problem
	}{
		{"not json", "optim_step", `{"model_id":`, "body", "invalid JSON"},
		{"array body", "optim_step", `[1]`, "body", "want a JSON object"},
		{"trailing data", "optim_step", `{"model_id":"m","adam_params":{}} {}`, "body", "after the JSON value"},
		{"too deep", "create_session", strings.Repeat("[", MaxDepth+1), "body", "nested deeper"},
		{"missing model_id", "optim_step", `{"adam_params":{}}`, "model_id", "missing"},
		{"model_id number", "optim_step", `{"model_id":5,"adam_params":{}}`, "model_id", "want a string"},
		{"negative seq_id", "optim_step", `{"model_id":"m","seq_id":-1,"adam_params":{}}`, "seq_id", "negative"},
		{"fractional seq_id", "optim_step", `{"model_id":"m","seq_id":1.5,"adam_params":{}}`, "seq_id", "want an integer"},
		{"wrong type literal", "optim_step", `{"model_id":"m","type":"sample","adam_params":{}}`, "type", `want "optim_step"`},
		{"missing adam", "optim_step", `{"model_id":"m"}`, "adam_params", "missing"},
		{"negative lr", "optim_step", `{"model_id":"m","adam_params":{"learning_rate":-1}}`, "adam_params", "learning_rate"},
		{"lr string", "optim_step", `{"model_id":"m","adam_params":{"learning_rate":"1e-4"}}`, "adam_params.learning_rate", "want a number"},
		{"unknown loss", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"mse","data":[]}}`, "forward_backward_input.loss_fn", "unknown loss"},
		{"missing data", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"ppo"}}`, "forward_backward_input.data", "missing"},
		{"data not list", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"ppo","data":{}}}`, "forward_backward_input.data", "want a list"},
		{"negative token", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"tokens":[1,-2]}]},"loss_fn_inputs":{"target_tokens":{"data":[1,2],"dtype":"int64"}}}]}}`, "forward_backward_input.data[0].model_input.chunks[0].tokens[1]", "out of range"},
		{"huge token", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"tokens":[1,4294967296]}]},"loss_fn_inputs":{"target_tokens":{"data":[1,2],"dtype":"int64"}}}]}}`, "forward_backward_input.data[0].model_input.chunks[0].tokens[1]", "out of range"},
		{"image chunk", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"type":"image","data":""}]},"loss_fn_inputs":{}}]}}`, "forward_backward_input.data[0].model_input.chunks[0].type", "not supported"},
		{"length mismatch", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"tokens":[1,2]}]},"loss_fn_inputs":{"target_tokens":{"data":[1,2,3],"dtype":"int64"}}}]}}`, "forward_backward_input.data[0].loss_fn_inputs.target_tokens", "want 2"},
		{"missing advantages", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"importance_sampling","data":[` + goodDatum + `]}}`, "forward_backward_input.data[0].loss_fn_inputs", `"logprobs"`},
		{"bad dtype", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"tokens":[1]}]},"loss_fn_inputs":{"target_tokens":{"data":[1],"dtype":"bfloat16"}}}]}}`, "forward_backward_input.data[0].loss_fn_inputs.target_tokens.dtype", "want"},
		{"float targets", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"tokens":[1]}]},"loss_fn_inputs":{"target_tokens":{"data":[1.5],"dtype":"float32"}}}]}}`, "forward_backward_input.data[0].loss_fn_inputs.target_tokens", "int64"},
		{"shape mismatch", "forward_backward", `{"model_id":"m","forward_backward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"tokens":[1,2]}]},"loss_fn_inputs":{"target_tokens":{"data":[1,2],"dtype":"int64","shape":[3]}}}]}}`, "forward_backward_input.data[0].loss_fn_inputs.target_tokens", "shape"},
		{"forward key on fwdbwd", "forward_backward", `{"model_id":"m","forward_input":{"loss_fn":"ppo","data":[]}}`, "forward_backward_input", "missing"},
		{"lora rank 0", "create_model", `{"session_id":"s","model_seq_id":0,"base_model":"b","lora_config":{"rank":0}}`, "lora_config.rank", "out of range"},
		{"lora flag string", "create_model", `{"session_id":"s","model_seq_id":0,"base_model":"b","lora_config":{"rank":4,"train_mlp":"yes"}}`, "lora_config.train_mlp", "true or false"},
		{"empty base model", "create_model", `{"session_id":"s","model_seq_id":0,"base_model":""}`, "base_model", "empty"},
		{"save traversal", "save_weights", `{"model_id":"m","path":"ckpt/../../etc/passwd"}`, "path", "has '/'"},
		{"save dotdot", "save_weights", `{"model_id":"m","path":".."}`, "path", "starts with '.'"},
		{"sampler save slash", "save_weights_for_sampler", `{"model_id":"m","path":"a/b"}`, "path", "has '/'"},
		{"load bad scheme", "load_weights", `{"model_id":"m","path":"file:///etc/passwd"}`, "path", "tinker://"},
		{"load traversal", "load_weights", `{"model_id":"m","path":"tinker://m/weights/.."}`, "path", "name"},
		{"sample nothing to sample", "asample", `{"prompt":{"chunks":[]},"sampling_params":{}}`, "sampling_session_id", "missing"},
		{"sample zero samples", "asample", `{"base_model":"b","num_samples":0,"prompt":{"chunks":[]},"sampling_params":{}}`, "num_samples", "out of range"},
		{"sample negative temp", "asample", `{"base_model":"b","prompt":{"chunks":[]},"sampling_params":{"temperature":-1}}`, "sampling_params.temperature", "negative"},
		{"sample top_p", "asample", `{"base_model":"b","prompt":{"chunks":[]},"sampling_params":{"top_p":1.5}}`, "sampling_params.top_p", "out of range"},
		{"sample mixed stop", "asample", `{"base_model":"b","prompt":{"chunks":[]},"sampling_params":{"stop":["a",1]}}`, "sampling_params.stop[1]", "mixes"},
		{"sample stop object", "asample", `{"base_model":"b","prompt":{"chunks":[]},"sampling_params":{"stop":{}}}`, "sampling_params.stop", "list of token ids"},
		{"sample max_tokens 0", "asample", `{"base_model":"b","prompt":{"chunks":[]},"sampling_params":{"max_tokens":0}}`, "sampling_params.max_tokens", "out of range"},
		{"sample prompt missing", "asample", `{"base_model":"b","sampling_params":{}}`, "prompt", "missing"},
		{"retrieve empty id", "retrieve_future", `{"request_id":""}`, "request_id", "empty"},
		{"heartbeat no session", "session_heartbeat", `{}`, "session_id", "missing"},
		{"sampling session without target", "create_sampling_session", `{"session_id":"s","sampling_session_seq_id":0}`, "model_path", "missing"},
		{"tags not strings", "create_session", `{"tags":[1]}`, "tags[0]", "want a string"},
	}
	require.GreaterOrEqual(t, len(cases), 30)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := decoderByName(t, c.decoder)([]byte(c.body))
			require.Error(t, err)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "got %T: %v", err, err)
			assert.Equal(t, c.field, fe.Field)
			assert.Contains(t, fe.Problem, c.says)
		})
	}
}
