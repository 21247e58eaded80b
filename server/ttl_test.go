package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/wire"
)

// Saves carry the SDK's ttl_seconds (≥ 0.9.0) and overwrite (≥ 0.20.0):
// a checkpoint with a TTL is listed with its expires_at and is gone (not
// listed, not loadable) once it passes; a save_weights under a name that
// exists is refused unless overwrite is set.
func TestSaveTTLAndOverwrite(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sess := h.session(keyA)
	model := h.model(keyA, sess, 0)
	seq := 0
	save := func(endpoint, extra string) (int, []byte) {
		seq++
		id := h.submit(keyA, endpoint, fmt.Sprintf(`{"model_id":%q,"seq_id":%d%s}`, model, seq, extra))
		r := h.result(keyA, id)
		if r.Failed != nil {
			return http.StatusBadRequest, []byte(r.Failed.Error)
		}
		return http.StatusOK, r.Result
	}
	list := func() map[string]wire.Checkpoint {
		status, body := h.call(keyA, http.MethodGet, "training_runs/"+model+"/checkpoints", nil)
		require.Equal(t, http.StatusOK, status, string(body))
		var l wire.CheckpointsListResponse
		require.NoError(t, json.Unmarshal(body, &l))
		out := map[string]wire.Checkpoint{}
		for _, c := range l.Checkpoints {
			out[c.CheckpointID] = c
		}
		return out
	}

	saved := h.clock.Now()
	status, out := save("save_weights", `,"path":"short","ttl_seconds":60`)
	require.Equal(t, http.StatusOK, status, string(out))
	status, out = save("save_weights_for_sampler", `,"path":"s","ttl_seconds":120`)
	require.Equal(t, http.StatusOK, status, string(out))
	status, out = save("save_weights", `,"path":"keep"`)
	require.Equal(t, http.StatusOK, status, string(out))
	l := list()
	require.Len(t, l, 3)
	require.NotNil(t, l["weights/short"].ExpiresAt)
	assert.True(t, l["weights/short"].ExpiresAt.Equal(saved.Add(time.Minute)))
	assert.True(t, l["sampler_weights/s"].ExpiresAt.Equal(saved.Add(2*time.Minute)))
	assert.Nil(t, l["weights/keep"].ExpiresAt, "no ttl_seconds: never expires")

	// overwrite
	seq++
	status, out = h.call(keyA, http.MethodPost, "save_weights", fmt.Sprintf(`{"model_id":%q,"seq_id":%d,"path":"keep"}`, model, seq))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, string(out), "exists; save under another name, or set overwrite to true")
	status, out = save("save_weights", `,"path":"keep","overwrite":true`)
	assert.Equal(t, http.StatusOK, status, string(out))

	// expiry
	h.clock.Advance(time.Minute)
	l = list()
	assert.NotContains(t, l, "weights/short")
	assert.Contains(t, l, "sampler_weights/s")
	seq++
	status, out = h.call(keyA, http.MethodPost, "load_weights", fmt.Sprintf(`{"model_id":%q,"path":"tinker://%s/weights/short","seq_id":%d}`, model, model, seq))
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(out), "expired at 2026-01-01T00:01:00Z")
	// The name of an expired checkpoint is free again.
	status, out = save("save_weights", `,"path":"short"`)
	assert.Equal(t, http.StatusOK, status, string(out))

	for _, bad := range []string{`,"ttl_seconds":0`, `,"ttl_seconds":-5`, `,"ttl_seconds":"soon"`, `,"overwrite":"yes"`} {
		seq++
		code, body := h.call(keyA, http.MethodPost, "save_weights", fmt.Sprintf(`{"model_id":%q,"seq_id":%d%s}`, model, seq, bad))
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", bad, body)
	}
}
