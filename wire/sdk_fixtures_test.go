package wire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// TestSDKGeneratedFixtures decodes the bodies in testdata/sdk, written by
// gen.py with the official SDK v0.3.0's own request classes, in both the
// form the SDK sends (exclude_unset) and the full form. Both forms of a
// request must decode to the same value.
func TestSDKGeneratedFixtures(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, v any)
	cases := map[string]struct {
		decode func([]byte) (any, error)
		check  check
	}{
		"create_session": {func(b []byte) (any, error) { return DecodeCreateSessionRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, "0.3.0", v.(CreateSessionRequest).SDKVersion)
		}},
		"session_heartbeat": {func(b []byte) (any, error) { return DecodeSessionHeartbeatRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, "sess-1", v.(SessionHeartbeatRequest).SessionID)
		}},
		"create_model": {func(b []byte) (any, error) { return DecodeCreateModelRequest(b) }, func(t *testing.T, v any) {
			r := v.(CreateModelRequest)
			assert.Equal(t, DefaultLoraConfig(), r.LoraConfig)
			assert.Equal(t, "Qwen/Qwen3-8B", r.BaseModel)
		}},
		"forward_backward": {func(b []byte) (any, error) { return DecodeForwardBackwardRequest(b, false) }, func(t *testing.T, v any) {
			r := v.(ForwardBackwardRequest)
			assert.Equal(t, int64(1), *r.SeqID)
			d := r.Input.Data[0]
			assert.Equal(t, []int{11, 12, 13}, d.ModelInput.AllTokens())
			assert.Equal(t, []int64{12, 13, 14}, d.LossFnInputs[rl.InputTargetTokens].Ints)
			assert.Equal(t, []float64{0, 1, 1}, d.LossFnInputs[rl.InputWeights].Floats)
		}},
		"forward_backward.ppo": {func(b []byte) (any, error) { return DecodeForwardBackwardRequest(b, false) }, func(t *testing.T, v any) {
			r := v.(ForwardBackwardRequest)
			assert.Equal(t, rl.PPO, r.Input.Loss.Name)
			assert.Equal(t, 1.2, r.Input.Loss.Config["clip_high_threshold"])
			assert.Equal(t, []float64{1, 1, -0.5}, r.Input.Data[0].LossFnInputs[rl.InputAdvantages].Floats)
			assert.Equal(t, []int{1, 2, 3}, r.Input.Data[0].ModelInput.AllTokens())
		}},
		"forward": {func(b []byte) (any, error) { return DecodeForwardBackwardRequest(b, true) }, func(t *testing.T, v any) {
			assert.Equal(t, int64(3), *v.(ForwardBackwardRequest).SeqID)
		}},
		"optim_step": {func(b []byte) (any, error) { return DecodeOptimStepRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, rl.AdamParams{LearningRate: 4e-5}.WithDefaults(), v.(OptimStepRequest).AdamParams)
		}},
		"save_weights": {func(b []byte) (any, error) { return DecodeSaveWeightsRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, "ckpt-1", v.(SaveWeightsRequest).Path)
		}},
		"load_weights": {func(b []byte) (any, error) { return DecodeLoadWeightsRequest(b) }, func(t *testing.T, v any) {
			r := v.(LoadWeightsRequest)
			assert.Equal(t, "tinker://model-1/weights/ckpt-1", r.Path)
			assert.False(t, r.Optimizer)
		}},
		"save_weights_for_sampler": {func(b []byte) (any, error) { return DecodeSaveWeightsForSamplerRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, "step-7", v.(SaveWeightsForSamplerRequest).Path)
		}},
		"save_weights_for_sampler.ephemeral": {func(b []byte) (any, error) { return DecodeSaveWeightsForSamplerRequest(b) }, func(t *testing.T, v any) {
			r := v.(SaveWeightsForSamplerRequest)
			assert.Empty(t, r.Path)
			assert.Equal(t, int64(1), *r.SamplingSessionSeqID)
		}},
		"create_sampling_session": {func(b []byte) (any, error) { return DecodeCreateSamplingSessionRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, "tinker://model-1/sampler_weights/step-7", v.(CreateSamplingSessionRequest).ModelPath)
		}},
		"create_sampling_session.base": {func(b []byte) (any, error) { return DecodeCreateSamplingSessionRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, "Qwen/Qwen3-8B", v.(CreateSamplingSessionRequest).BaseModel)
		}},
		"asample": {func(b []byte) (any, error) { return DecodeSampleRequest(b) }, func(t *testing.T, v any) {
			r := v.(SampleRequest)
			assert.Equal(t, 4, r.NumSamples)
			assert.Equal(t, rl.SamplingParams{MaxTokens: 20, Temperature: 0.7, StopStrings: []string{"\n"}}, r.SamplingParams.ToRL(1))
		}},
		"asample.stop_ids": {func(b []byte) (any, error) { return DecodeSampleRequest(b) }, func(t *testing.T, v any) {
			p := v.(SampleRequest).SamplingParams.ToRL(1)
			assert.Equal(t, []int{7, 9}, p.StopTokens)
			assert.Equal(t, 5, p.TopK)
			assert.Equal(t, 0.9, p.TopP)
			assert.Equal(t, int64(3), *p.Seed)
			assert.Equal(t, 1.0, p.Temperature, "absent temperature is the wire default 1")
		}},
		"asample.stop_string": {func(b []byte) (any, error) { return DecodeSampleRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, []string{"###"}, v.(SampleRequest).SamplingParams.Stop.Strings)
		}},
		"asample.compute_logprobs": {func(b []byte) (any, error) { return DecodeSampleRequest(b) }, func(t *testing.T, v any) {
			assert.True(t, v.(SampleRequest).PromptLogprobs)
		}},
		"retrieve_future": {func(b []byte) (any, error) { return DecodeFutureRetrieveRequest(b) }, func(t *testing.T, v any) {
			assert.Equal(t, "req-1", v.(FutureRetrieveRequest).RequestID)
		}},
		"get_info": {func(b []byte) (any, error) { return DecodeModelRequest(b, "get_info") }, func(t *testing.T, v any) {
			assert.Equal(t, "model-1", v.(ModelRequest).ModelID)
		}},
		"unload_model": {func(b []byte) (any, error) { return DecodeModelRequest(b, "unload_model") }, func(t *testing.T, v any) {
			assert.Equal(t, "model-1", v.(ModelRequest).ModelID)
		}},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "sdk", "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2*len(cases), "an sdk and a full fixture per case")
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var vals []any
			for _, variant := range []string{"sdk", "full"} {
				b, err := os.ReadFile(filepath.Join("testdata", "sdk", name+"."+variant+".json"))
				require.NoError(t, err)
				v, err := c.decode(b)
				require.NoError(t, err, "%s.%s: %s", name, variant, strings.TrimSpace(string(b)))
				c.check(t, v)
				vals = append(vals, v)
			}
			assert.Equal(t, vals[0], vals[1], "exclude_unset and full forms mean the same")
		})
	}
}
