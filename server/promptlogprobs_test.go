package server_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/localbackend"
	"github.com/tandemrl/tandem/wire"
)

// The SDK's SamplingClient.compute_logprobs(prompt) (and sample with
// include_prompt_logprobs) sends asample with "prompt_logprobs": true and
// max_tokens 1; tinker-cookbook computes its KL penalty and reference
// log-probs with it. On the embedded engine the answer's prompt log-probs
// are the trainer's forward log-probs of the same tokens, the first null.
func TestPromptLogprobsAreTheForwardLogprobs(t *testing.T) {
	t.Parallel()
	h := newEngineHarness(t)
	sess := h.session(keyA)
	model := h.model(keyA, sess, 0)

	prompt := []int{engine.BOS, 20, 14, 21, 3, 30}
	fwd := h.submit(keyA, "forward", fmt.Sprintf(`{"model_id":%q,"seq_id":1,"forward_input":{"loss_fn":"cross_entropy","data":[
		{"model_input":{"chunks":[{"tokens":%s}]},"loss_fn_inputs":{"target_tokens":{"data":%s,"dtype":"int64"}}}]}}`,
		model, ints(prompt[:len(prompt)-1]), ints(prompt[1:])))
	out, err := wire.DecodeForwardBackwardOutput(h.ok(keyA, fwd))
	require.NoError(t, err)
	want := out.LossFnOutputs[0]["logprobs"].Floats
	require.Len(t, want, len(prompt)-1)

	// The two request shapes: v0.3.0's compute_logprobs (a sampling
	// session, num_samples 1, max_tokens 1) and a plain sample on the base
	// model that also asks for the prompt's log-probs.
	ss, err := wire.DecodeCreateSamplingSessionResponse(h.post(keyA, "create_sampling_session",
		fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":0,"base_model":%q}`, sess, base)))
	require.NoError(t, err)
	for name, body := range map[string]string{
		"compute_logprobs": fmt.Sprintf(`{"sampling_session_id":%q,"seq_id":0,"num_samples":1,"prompt":{"chunks":[{"tokens":%s}]},
			"sampling_params":{"max_tokens":1},"prompt_logprobs":true,"topk_prompt_logprobs":0}`, ss.SamplingSessionID, ints(prompt)),
		"sample": fmt.Sprintf(`{"base_model":%q,"num_samples":2,"prompt":{"chunks":[{"tokens":%s}]},
			"sampling_params":{"max_tokens":3,"seed":4,"temperature":1},"prompt_logprobs":true}`, base, ints(prompt)),
	} {
		sr, err := wire.DecodeSampleResponse(h.ok(keyA, h.submit(keyA, "asample", body)))
		require.NoError(t, err, name)
		require.Len(t, sr.PromptLogprobs, len(prompt), name)
		assert.Nil(t, sr.PromptLogprobs[0], "%s: the first prompt token has no log-prob", name)
		for i, lp := range sr.PromptLogprobs[1:] {
			require.NotNil(t, lp, "%s: token %d", name, i+1)
			assert.InDelta(t, want[i], *lp, 1e-5, "%s: token %d", name, i+1)
		}
	}

	// Without the flag no prompt log-probs come back.
	sr, err := wire.DecodeSampleResponse(h.ok(keyA, h.submit(keyA, "asample", fmt.Sprintf(
		`{"base_model":%q,"num_samples":1,"prompt":{"chunks":[{"tokens":%s}]},"sampling_params":{"max_tokens":1}}`, base, ints(prompt)))))
	require.NoError(t, err)
	assert.Empty(t, sr.PromptLogprobs)
}

// newEngineHarness is a harness whose backend is the embedded engine on a
// small random model named base.
func newEngineHarness(t *testing.T) *harness {
	t.Helper()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	m := enginetest.Model(t, 2, 32, 7)
	be, err := localbackend.New(localbackend.Options{Bases: map[string]*engine.Model[float32]{base: m}, Store: st})
	require.NoError(t, err)
	return newHarnessWith(t, func(c *server.Config) {
		c.Models = []server.ModelSpec{{Name: base, VocabSize: m.Config.Vocab, MaxContextLength: m.Config.Context}}
	}, func(o *server.Options) { o.Backend = be })
}

func ints(v []int) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// topk_prompt_logprobs (tinker-cookbook's off-policy distillation): at each
// prompt position after the first, the k most likely tokens, most likely
// first; the prompt's own token, when among them, with the log-prob the
// forward gives it; the first position null; in JSON and in protobuf.
func TestTopKPromptLogprobs(t *testing.T) {
	t.Parallel()
	h := newEngineHarness(t)
	prompt := []int{engine.BOS, 20, 14, 21, 3, 30}
	const k = 5
	body := fmt.Sprintf(`{"base_model":%q,"num_samples":1,"prompt":{"chunks":[{"tokens":%s}]},
		"sampling_params":{"max_tokens":1},"prompt_logprobs":true,"topk_prompt_logprobs":%d}`, base, ints(prompt), k)
	id := h.submit(keyA, "asample", body)
	sr, err := wire.DecodeSampleResponse(h.ok(keyA, id))
	require.NoError(t, err)
	require.Len(t, sr.TopKPromptLogprobs, len(prompt))
	assert.Nil(t, sr.TopKPromptLogprobs[0])
	for i := 1; i < len(prompt); i++ {
		row := sr.TopKPromptLogprobs[i]
		require.Len(t, row, k, "position %d", i)
		for j := 1; j < k; j++ {
			assert.GreaterOrEqual(t, row[j-1].Logprob, row[j].Logprob, "position %d sorted", i)
		}
		found := false
		for _, e := range row {
			if e.Token == prompt[i] {
				found = true
				assert.InDelta(t, *sr.PromptLogprobs[i], e.Logprob, 1e-6, "position %d: the prompt token's log-prob", i)
			}
		}
		if !found { // a token outside the top k is no likelier than the k-th
			assert.GreaterOrEqual(t, row[k-1].Logprob, *sr.PromptLogprobs[i]-1e-6, "position %d", i)
		}
	}
	// The same answer in protobuf, as SDK v0.25.0 polls for it.
	ct, pb := h.protoResult(id)
	require.Equal(t, wire.ContentTypeProto, ct)
	pr, err := wire.DecodeSampleResponseProto(pb)
	require.NoError(t, err)
	require.Len(t, pr.TopKPromptLogprobs, len(prompt))
	assert.Nil(t, pr.TopKPromptLogprobs[0])
	for i := 1; i < len(prompt); i++ {
		for j, e := range pr.TopKPromptLogprobs[i] {
			assert.Equal(t, sr.TopKPromptLogprobs[i][j].Token, e.Token)
			assert.InDelta(t, sr.TopKPromptLogprobs[i][j].Logprob, e.Logprob, 1e-5)
		}
	}
}
