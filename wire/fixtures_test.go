package wire

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// The fixtures below are what SDK v0.3.0 puts on the wire: model_dump(request,
// exclude_unset=True, mode="json"). "minimal" is what the SDK's own clients
// send (defaults and discriminators absent); "full" sets every field.

func TestCreateModelFixtures(t *testing.T) {
	t.Parallel()
	// service_client.create_lora_training_client sets every LoraConfig field
	// explicitly, so they appear even at their defaults; seed None appears as null.
	sdk := `{"session_id":"s-1","model_seq_id":0,"base_model":"Qwen/Qwen3-8B",
		"lora_config":{"rank":32,"seed":null,"train_mlp":true,"train_attn":true,"train_unembed":true},
		"user_metadata":null}`
	r, err := DecodeCreateModelRequest([]byte(sdk))
	require.NoError(t, err)
	assert.Equal(t, "s-1", r.SessionID)
	assert.Equal(t, "Qwen/Qwen3-8B", r.BaseModel)
	assert.Equal(t, DefaultLoraConfig(), r.LoraConfig)

	full := `{"session_id":"s-1","model_seq_id":3,"base_model":"b","type":"create_model",
		"lora_config":{"rank":8,"seed":7,"train_mlp":false,"train_attn":true,"train_unembed":false},
		"user_metadata":{"k":"v"},"future_field":[1,2]}`
	r, err = DecodeCreateModelRequest([]byte(full))
	require.NoError(t, err)
	seed := int64(7)
	assert.Equal(t, LoraConfig{Rank: 8, Seed: &seed, TrainAttn: true}, r.LoraConfig)
	assert.Equal(t, int64(3), r.ModelSeqID)
	assert.Equal(t, "v", r.UserMetadata["k"])

	// lora_config absent entirely, and present with only the rank.
	r, err = DecodeCreateModelRequest([]byte(`{"session_id":"s","model_seq_id":1,"base_model":"b"}`))
	require.NoError(t, err)
	assert.Equal(t, DefaultLoraConfig(), r.LoraConfig)
	r, err = DecodeCreateModelRequest([]byte(`{"session_id":"s","model_seq_id":1,"base_model":"b","lora_config":{"rank":4}}`))
	require.NoError(t, err)
	want := DefaultLoraConfig()
	want.Rank = 4
	assert.Equal(t, want, r.LoraConfig)
}

func TestForwardBackwardFixtures(t *testing.T) {
	t.Parallel()
	// ModelInput.from_ints leaves the chunk "type" out; TensorData.from_numpy
	// sets data, dtype and shape.
	sdk := `{"forward_backward_input":{"data":[{"loss_fn_inputs":{
			"target_tokens":{"data":[5,6,7],"dtype":"int64","shape":[3]},
			"weights":{"data":[0.0,1.0,1.0],"dtype":"float32","shape":[3]}},
			"model_input":{"chunks":[{"tokens":[4,5,6]}]}}],
		"loss_fn":"cross_entropy"},"model_id":"m-1","seq_id":1}`
	r, err := DecodeForwardBackwardRequest([]byte(sdk), false)
	require.NoError(t, err)
	require.NotNil(t, r.SeqID)
	assert.Equal(t, int64(1), *r.SeqID)
	assert.Equal(t, "m-1", r.ModelID)
	assert.Equal(t, rl.CrossEntropy, r.Input.Loss.Name)
	require.Len(t, r.Input.Data, 1)
	d := r.Input.Data[0]
	assert.Equal(t, []int{4, 5, 6}, d.ModelInput.AllTokens())
	assert.Equal(t, []int64{5, 6, 7}, d.LossFnInputs["target_tokens"].Ints)
	assert.Equal(t, []float64{0, 1, 1}, d.LossFnInputs["weights"].Floats)

	// full form: explicit types, loss config, a 2-D shape, two chunks, forward endpoint key.
	full := `{"forward_input":{"data":[{"loss_fn_inputs":{
			"target_tokens":{"data":[1,2,3,4],"dtype":"int64","shape":[2,2]},
			"logprobs":{"data":[-1,-2,-3,-4],"dtype":"float32"},
			"advantages":[0.5,0.5,-1,-1]},
			"model_input":{"chunks":[{"type":"encoded_text","tokens":[9,1]},{"type":"encoded_text","tokens":[2,3]}]}}],
		"loss_fn":"ppo","loss_fn_config":{"clip_low_threshold":0.8,"clip_high_threshold":1.2}},
		"model_id":"m-1","seq_id":7}`
	r, err = DecodeForwardBackwardRequest([]byte(full), true)
	require.NoError(t, err)
	assert.True(t, r.Forward)
	assert.Equal(t, map[string]float64{"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}, r.Input.Loss.Config)
	assert.Equal(t, []int{2, 2}, r.Input.Data[0].LossFnInputs["target_tokens"].Shape)
	adv := r.Input.Data[0].LossFnInputs["advantages"]
	assert.Equal(t, rl.Float32, adv.DType, "a bare list takes the dtype the SDK gives its key")

	// Round trip: what our encoder writes decodes to the same request.
	b, err := json.Marshal(r)
	require.NoError(t, err)
	back, err := DecodeForwardBackwardRequest(b, true)
	require.NoError(t, err)
	assert.Equal(t, r, back)
}

func TestOptimStepFixtures(t *testing.T) {
	t.Parallel()
	// types.AdamParams(learning_rate=1e-4) sets only learning_rate.
	r, err := DecodeOptimStepRequest([]byte(`{"adam_params":{"learning_rate":0.0004},"model_id":"m","seq_id":2}`))
	require.NoError(t, err)
	want := rl.AdamParams{LearningRate: 4e-4}.WithDefaults()
	assert.Equal(t, want, r.AdamParams)

	r, err = DecodeOptimStepRequest([]byte(`{"adam_params":{},"model_id":"m"}`))
	require.NoError(t, err)
	assert.Equal(t, rl.AdamParams{}.WithDefaults(), r.AdamParams)
	assert.Nil(t, r.SeqID)

	full := `{"adam_params":{"learning_rate":0.01,"beta1":0.8,"beta2":0.9,"eps":1e-8,"weight_decay":0.1,"grad_clip_norm":1.0},
		"model_id":"m","seq_id":3,"type":"optim_step"}`
	r, err = DecodeOptimStepRequest([]byte(full))
	require.NoError(t, err)
	assert.Equal(t, rl.AdamParams{LearningRate: 0.01, Beta1: 0.8, Beta2: 0.9, Eps: 1e-8, WeightDecay: 0.1, GradClipNorm: 1}, r.AdamParams)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	back, err := DecodeOptimStepRequest(b)
	require.NoError(t, err)
	assert.Equal(t, r, back)
}

func TestSampleFixtures(t *testing.T) {
	t.Parallel()
	// SamplingClient._send_asample_request sets sampling_session_id, seq_id,
	// num_samples, prompt, sampling_params, prompt_logprobs and
	// topk_prompt_logprobs; SamplingParams(max_tokens=20) sets only max_tokens.
	sdk := `{"sampling_session_id":"ss-1","seq_id":0,"num_samples":4,
		"prompt":{"chunks":[{"tokens":[1,2,3]}]},"sampling_params":{"max_tokens":20},
		"prompt_logprobs":false,"topk_prompt_logprobs":0}`
	r, err := DecodeSampleRequest([]byte(sdk))
	require.NoError(t, err)
	assert.Equal(t, 4, r.NumSamples)
	assert.Equal(t, "ss-1", r.SamplingSessionID)
	p := r.SamplingParams.ToRL(100)
	assert.Equal(t, rl.SamplingParams{MaxTokens: 20, Temperature: 1}, p, "wire temperature default is 1; top_k -1 and top_p 1 mean no cut")

	// num_samples absent means 1; max_tokens absent takes the server default.
	r, err = DecodeSampleRequest([]byte(`{"model_path":"tinker://run-1/sampler_weights/s1","prompt":{"chunks":[]},"sampling_params":{}}`))
	require.NoError(t, err)
	assert.Equal(t, 1, r.NumSamples)
	assert.Equal(t, 100, r.SamplingParams.ToRL(100).MaxTokens)

	seed := int64(9)
	cases := []struct {
		stop string
		want Stop
	}{
		{`"\n"`, Stop{Strings: []string{"\n"}}},
		{`["a","bc"]`, Stop{Strings: []string{"a", "bc"}}},
		{`[7, 8]`, Stop{Tokens: []int{7, 8}}},
		{`[]`, Stop{}},
		{`null`, Stop{}},
	}
	for _, c := range cases {
		body := `{"base_model":"b","prompt":{"chunks":[{"type":"encoded_text","tokens":[1]}]},"type":"sample",
			"sampling_params":{"max_tokens":5,"seed":9,"temperature":0,"top_k":3,"top_p":0.5,"stop":` + c.stop + `}}`
		r, err := DecodeSampleRequest([]byte(body))
		require.NoError(t, err, c.stop)
		assert.Equal(t, c.want, r.SamplingParams.Stop, c.stop)
		got := r.SamplingParams.ToRL(1)
		assert.Equal(t, rl.SamplingParams{MaxTokens: 5, Temperature: 0, TopK: 3, TopP: 0.5, Seed: &seed,
			StopStrings: c.want.Strings, StopTokens: c.want.Tokens}, got)
		// rl -> wire -> JSON -> wire -> rl is the identity.
		w, err := SamplingParamsFromRL(got)
		require.NoError(t, err)
		b, err := json.Marshal(SampleRequest{NumSamples: 1, Prompt: rl.Tokens([]int{1}), SamplingParams: w, BaseModel: "b"})
		require.NoError(t, err)
		back, err := DecodeSampleRequest(b)
		require.NoError(t, err)
		assert.Equal(t, got, back.SamplingParams.ToRL(1))
	}
}

func TestSamplingParamsFromRLGreedy(t *testing.T) {
	t.Parallel()
	w, err := SamplingParamsFromRL(rl.SamplingParams{MaxTokens: 3})
	require.NoError(t, err)
	b, err := json.Marshal(w)
	require.NoError(t, err)
	assert.JSONEq(t, `{"max_tokens":3,"temperature":0,"top_k":-1,"top_p":1}`, string(b))
	_, err = SamplingParamsFromRL(rl.SamplingParams{MaxTokens: 3, StopStrings: []string{"x"}, StopTokens: []int{1}})
	assert.ErrorContains(t, err, "not both")
}

func TestSessionAndWeightsFixtures(t *testing.T) {
	t.Parallel()
	cs, err := DecodeCreateSessionRequest([]byte(`{"tags":[],"user_metadata":{},"sdk_version":"0.3.0"}`))
	require.NoError(t, err)
	assert.Equal(t, "0.3.0", cs.SDKVersion)

	hb, err := DecodeSessionHeartbeatRequest([]byte(`{"session_id":"s"}`))
	require.NoError(t, err)
	assert.Equal(t, "s", hb.SessionID)

	ss, err := DecodeCreateSamplingSessionRequest([]byte(`{"session_id":"s","sampling_session_seq_id":0,"model_path":"tinker://m/sampler_weights/step-1","base_model":null}`))
	require.NoError(t, err)
	assert.Equal(t, "tinker://m/sampler_weights/step-1", ss.ModelPath)

	sw, err := DecodeSaveWeightsRequest([]byte(`{"model_id":"m","path":"ckpt-1","seq_id":4}`))
	require.NoError(t, err)
	assert.Equal(t, "ckpt-1", sw.Path)

	// save_weights_and_get_sampling_client: no path, a sampling_session_seq_id.
	sf, err := DecodeSaveWeightsForSamplerRequest([]byte(`{"model_id":"m","seq_id":5,"sampling_session_seq_id":1}`))
	require.NoError(t, err)
	assert.Empty(t, sf.Path)
	require.NotNil(t, sf.SamplingSessionSeqID)

	lw, err := DecodeLoadWeightsRequest([]byte(`{"model_id":"m","path":"tinker://m/weights/ckpt-1","seq_id":6}`))
	require.NoError(t, err)
	assert.False(t, lw.Optimizer)
	lw, err = DecodeLoadWeightsRequest([]byte(`{"model_id":"m","path":"tinker://m/weights/ckpt-1","optimizer":true}`))
	require.NoError(t, err)
	assert.True(t, lw.Optimizer)

	fr, err := DecodeFutureRetrieveRequest([]byte(`{"request_id":"r-1"}`))
	require.NoError(t, err)
	assert.Equal(t, "r-1", fr.RequestID)
}

func TestDecodeFutureResult(t *testing.T) {
	t.Parallel()
	r, err := DecodeFutureResult([]byte(`{"type":"try_again","request_id":"r","queue_state":"paused_capacity"}`))
	require.NoError(t, err)
	require.NotNil(t, r.TryAgain)
	assert.Equal(t, QueuePausedCapacity, r.TryAgain.QueueState)

	r, err = DecodeFutureResult([]byte(`{"error":"boom","category":"user"}`))
	require.NoError(t, err)
	assert.Equal(t, &RequestFailedResponse{Error: "boom", Category: "user"}, r.Failed)
	r, err = DecodeFutureResult([]byte(`{"error":"boom","category":"weird"}`))
	require.NoError(t, err)
	assert.Equal(t, ErrorCategoryUnknown, r.Failed.Category)

	r, err = DecodeFutureResult([]byte(`{"metrics":{"lr":1}}`))
	require.NoError(t, err)
	o, err := DecodeOptimStepResponse(r.Result)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"lr": 1}, o.Metrics)
}

func TestSampleResponseRoundTrip(t *testing.T) {
	t.Parallel()
	out := rl.SampleOutput{
		Sequences:      []rl.Sequence{{Tokens: []int{3, 4}, Logprobs: []float64{-0.5, -1}, StopReason: rl.StopStop}},
		PromptLogprobs: []float64{0, -2, -3},
		Version:        4,
	}
	b, err := json.Marshal(SampleResponseFromRL(out, true))
	require.NoError(t, err)
	back, err := DecodeSampleResponse(b)
	require.NoError(t, err)
	require.Len(t, back.PromptLogprobs, 3)
	assert.Nil(t, back.PromptLogprobs[0], "the first prompt token has no log-prob")
	assert.Equal(t, -2.0, *back.PromptLogprobs[1])
	assert.Equal(t, out.Sequences[0].Tokens, back.Sequences[0].Tokens)
	assert.Equal(t, int64(4), *back.PolicyVersion)
}

func TestForwardBackwardOutputRoundTrip(t *testing.T) {
	t.Parallel()
	out := rl.ForwardBackwardOutput{
		LossFnOutputs: []map[string]rl.TensorData{{"logprobs": rl.FloatTensor([]float64{-1.5, -0.25})}},
		Metrics:       map[string]float64{"loss:sum": 1.75},
	}
	b, err := json.Marshal(ForwardBackwardOutputFromRL(out))
	require.NoError(t, err)
	back, err := DecodeForwardBackwardOutput(b)
	require.NoError(t, err)
	assert.Equal(t, out, back.ToRL())
	assert.Equal(t, LossFnOutputType, back.LossFnOutputType)
}

func TestTinkerPath(t *testing.T) {
	t.Parallel()
	p, err := ParseTinkerPath("tinker://run-1/sampler_weights/step-0007")
	require.NoError(t, err)
	assert.Equal(t, TinkerPath{Run: "run-1", Kind: KindSamplerWeights, Name: "step-0007"}, p)
	assert.Equal(t, "sampler_weights/step-0007", p.CheckpointID())
	assert.Equal(t, "sampler", p.CheckpointType())
	loops, err := ParseTinkerPath("bt://loops:run-1/sampler_weights/step-0007")
	require.NoError(t, err)
	assert.Equal(t, p, loops, "Baseten Loops' spelling of the same path")
	for _, bad := range []string{
		"bt://loops:run-1/weights", "bt://run-1/weights/x", "bt://loops:../weights/x",
		"run-1/weights/x", "tinker://run-1/weights", "tinker://run-1/other/x",
		"tinker://run-1/weights/..", "tinker://../weights/x", "tinker://run-1/weights/a/b",
		"tinker://run-1/weights/", "tinker://run 1/weights/x",
	} {
		_, err := ParseTinkerPath(bad)
		assert.ErrorIs(t, err, ErrBadPath, bad)
	}
}

func TestFieldErrorIsBadRequest(t *testing.T) {
	t.Parallel()
	_, err := DecodeOptimStepRequest([]byte(`{"adam_params":{"beta1":2},"model_id":"m"}`))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrBadRequest)
	var fe *FieldError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, "adam_params", fe.Field)
	assert.Contains(t, fe.Problem, "beta1")
}
