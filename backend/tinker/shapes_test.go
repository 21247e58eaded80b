package tinker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// TestClientSpeaksSDKShapes records what the client sends and checks it
// against the shapes SDK v0.3.0 sends, so that other Tinker-compatible
// servers understand it (JSON mode; TestProtoShapes has protobuf mode's).
func TestClientSpeaksSDKShapes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	bodies := map[string][]map[string]any{}
	headers := map[string][]http.Header{}
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			ep := strings.TrimPrefix(r.URL.Path, "/api/v1/")
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			mu.Lock()
			bodies[ep] = append(bodies[ep], m)
			headers[ep] = append(headers[ep], r.Header.Clone())
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
	e := newEnv(t, wrap, forceJSON)
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	tr.ForwardBackward(ctx, []rl.Datum{datum(1, 2)}, rl.Loss{Name: rl.PPO, Config: map[string]float64{"clip_low_threshold": 0.9}})
	tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1e-3})
	ref, err := tr.SaveForSampler(ctx, "s").Wait(ctx)
	require.NoError(t, err)
	smp := e.c.NewSampler(base)
	require.NoError(t, smp.Load(ctx, ref))
	_, err = smp.Sample(ctx, rl.Tokens([]int{1}), 2, rl.SamplingParams{MaxTokens: 2, StopStrings: []string{"\n"}})
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	cs := bodies["create_session"][0]
	assert.Equal(t, "0.3.0", cs["sdk_version"])
	assert.Contains(t, cs, "tags")

	cm := bodies["create_model"][0]
	assert.Equal(t, float64(0), cm["model_seq_id"])
	assert.Equal(t, e.c.SessionID(), cm["session_id"])
	lora := cm["lora_config"].(map[string]any)
	assert.Equal(t, float64(32), lora["rank"])
	for _, k := range []string{"train_unembed", "train_mlp", "train_attn"} {
		assert.Equal(t, true, lora[k], k)
	}

	fb := bodies["forward_backward"][0]
	assert.Equal(t, float64(1), fb["seq_id"], "seq_id starts at 1 as in the SDK")
	in := fb["forward_backward_input"].(map[string]any)
	assert.Equal(t, "ppo", in["loss_fn"])
	assert.Equal(t, map[string]any{"clip_low_threshold": 0.9}, in["loss_fn_config"])
	d := in["data"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []any{1.0, 2.0}}}}, d["model_input"])
	tt := d["loss_fn_inputs"].(map[string]any)["target_tokens"].(map[string]any)
	assert.Equal(t, "int64", tt["dtype"])
	assert.Equal(t, []any{2.0}, tt["shape"])

	op := bodies["optim_step"][0]
	assert.Equal(t, float64(2), op["seq_id"])
	assert.Equal(t, map[string]any{"learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-12}, op["adam_params"],
		"the four fields of SDK v0.3.0's AdamParams; zero weight_decay and grad_clip_norm are left out")

	sw := bodies["save_weights_for_sampler"][0]
	assert.Equal(t, "s", sw["path"])
	assert.Equal(t, float64(3), sw["seq_id"])

	ss := bodies["create_sampling_session"][0]
	assert.Equal(t, ref.URI, ss["model_path"])
	assert.Contains(t, ss, "sampling_session_seq_id")

	as := bodies["asample"][0]
	assert.Equal(t, float64(0), as["seq_id"], "sampling seq_id starts at 0 as in the SDK")
	assert.Equal(t, float64(2), as["num_samples"])
	assert.Equal(t, map[string]any{"max_tokens": 2.0, "temperature": 0.0, "top_k": -1.0, "top_p": 1.0, "stop": []any{"\n"}}, as["sampling_params"])
	assert.Equal(t, "1", headers["asample"][0].Get("X-Tinker-Sampling-Backpressure"))

	for ep, hs := range headers {
		for _, h := range hs {
			assert.Equal(t, apiKey, h.Get("X-API-Key"), ep)
			if ep != "retrieve_future" && ep != "session_heartbeat" {
				assert.NotEmpty(t, h.Get("X-Idempotency-Key"), ep)
			}
		}
	}
}
