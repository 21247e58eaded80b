package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/wire"
)

// client/config is the SDK's first call since 0.18.0: it must answer 200
// with the flags that keep the SDK on what this server serves, for any
// sdk_version, and refuse a request without a key or with a bad body.
func TestClientConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *server.Config) { c.MaxInFlight = 100; c.MaxBodyBytes = 4 << 20 })
	for _, body := range []string{`{"sdk_version":"0.25.0"}`, `{"sdk_version":"0.18.0","later_field":1}`, `{}`} {
		var got map[string]any
		require.NoError(t, json.Unmarshal(h.post(keyA, "client/config", body), &got), body)
		assert.Equal(t, false, got["pjwt_auth_enabled"], "no JWT exchange: the key is the credential")
		assert.Equal(t, "api_key", got["credential_default_source"])
		assert.Equal(t, false, got["proto_compress_fwdbwd"], "no zstd")
		assert.Equal(t, false, got["use_pyqwest_transport"], "the plain HTTP transport")
		assert.Equal(t, false, got["create_model_via_load_weights"])
		assert.Equal(t, true, got["parallel_fwdbwd_chunks"], "the sequencer parks chunks that arrive ahead of their seq_id")
		assert.Equal(t, float64(100), got["sample_max_concurrent_requests"], "no more than MaxInFlight")
		assert.Equal(t, float64(2<<20), got["fwdbwd_max_chunk_bytes_count"], "within MaxBodyBytes")
		assert.Equal(t, float64(1024), got["fwdbwd_max_chunk_len"])
	}
	status, _ := h.call("", http.MethodPost, "client/config", `{"sdk_version":"0.25.0"}`)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, out := h.call(keyA, http.MethodPost, "client/config", `{"sdk_version":25}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, string(out), "sdk_version")
	status, _ = h.call(keyA, http.MethodPost, "client/config", `not json`)
	assert.Equal(t, http.StatusBadRequest, status)
}

func TestDecodeClientConfigRequest(t *testing.T) {
	t.Parallel()
	r, err := wire.DecodeClientConfigRequest([]byte(`{"sdk_version":"0.25.0"}`))
	require.NoError(t, err)
	assert.Equal(t, "0.25.0", r.SDKVersion)
	_, err = wire.DecodeClientConfigRequest([]byte(`[1]`))
	assert.Error(t, err)
}
