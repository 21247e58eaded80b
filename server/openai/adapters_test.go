package openai

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdapterLifecycle: a loaded adapter is listed with its parent,
// changes the log-probs, refuses a duplicate, and once unloaded its name
// is unknown (404 as vLLM).
func TestAdapterLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dir := trainedAdapter(t, f.base)
	code, body := f.do(t, http.MethodPost, "/v1/load_lora_adapter", map[string]any{"lora_name": "run-v1", "lora_path": dir})
	require.Equal(t, http.StatusOK, code, "%s", body)
	assert.Equal(t, "Success: LoRA adapter 'run-v1' added successfully.", string(body))

	var models ModelList
	code, body = f.do(t, http.MethodGet, "/v1/models", nil)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(body, &models))
	require.Len(t, models.Data, 2)
	assert.Equal(t, baseName, models.Data[0].ID)
	assert.Nil(t, models.Data[0].Parent)
	assert.Equal(t, context_, *models.Data[0].MaxModelLen)
	assert.Equal(t, "run-v1", models.Data[1].ID)
	assert.Equal(t, baseName, *models.Data[1].Parent)
	assert.Equal(t, dir, *models.Data[1].Root)
	assert.Nil(t, models.Data[1].MaxModelLen)

	req := map[string]any{"prompt": []int{5, 9, 14, 3}, "max_tokens": 6, "temperature": 0, "logprobs": 0, "return_token_ids": true, "ignore_eos": true}
	var onBase, onAdapter CompletionResponse
	f.post(t, "/v1/completions", req, &onBase)
	req["model"] = "run-v1"
	f.post(t, "/v1/completions", req, &onAdapter)
	assert.Equal(t, "run-v1", onAdapter.Model)
	assert.NotEqual(t, deref(onBase.Choices[0].Logprobs.TokenLogprobs), deref(onAdapter.Choices[0].Logprobs.TokenLogprobs))

	code, body = f.do(t, http.MethodPost, "/v1/load_lora_adapter", map[string]any{"lora_name": "run-v1", "lora_path": dir})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, string(body), "The lora adapter 'run-v1' has already been loaded.")

	code, body = f.do(t, http.MethodPost, "/v1/unload_lora_adapter", map[string]any{"lora_name": "run-v1"})
	require.Equal(t, http.StatusOK, code, "%s", body)
	assert.Equal(t, "Success: LoRA adapter 'run-v1' removed successfully.", string(body))
	code, body = f.do(t, http.MethodPost, "/v1/completions", req)
	assert.Equal(t, http.StatusNotFound, code)
	var er ErrorResponse
	require.NoError(t, json.Unmarshal(body, &er))
	assert.Equal(t, "The model `run-v1` does not exist.", er.Error.Message)
	assert.Equal(t, "NotFoundError", er.Error.Type)
	assert.Equal(t, "model", *er.Error.Param)
	assert.Equal(t, 404, er.Error.Code)
	code, _ = f.do(t, http.MethodPost, "/v1/unload_lora_adapter", map[string]any{"lora_name": "run-v1"})
	assert.Equal(t, http.StatusNotFound, code)
}

func TestAdapterErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	broken := t.TempDir()
	require.NoError(t, writeFile(filepath.Join(broken, adapterConfigFile), `{"peft_type": "LORA"}`))
	cases := []struct {
		name, path string
		body       any
		status     int
		msg        string
	}{
		{"no name", "/v1/load_lora_adapter", map[string]any{"lora_path": "/x"}, 400, "Both 'lora_name' and 'lora_path' must be provided."},
		{"no path", "/v1/load_lora_adapter", map[string]any{"lora_name": "a"}, 400, "Both 'lora_name' and 'lora_path' must be provided."},
		{"missing folder", "/v1/load_lora_adapter", map[string]any{"lora_name": "a", "lora_path": filepath.Join(t.TempDir(), "none")}, 404, "Loading lora a failed: No adapter found for"},
		{"bad adapter", "/v1/load_lora_adapter", map[string]any{"lora_name": "a", "lora_path": broken}, 500, "Loading lora a failed:"},
		{"base name taken", "/v1/load_lora_adapter", map[string]any{"lora_name": baseName, "lora_path": broken}, 400, "has already been loaded"},
		{"in place", "/v1/load_lora_adapter", map[string]any{"lora_name": "a", "lora_path": broken, "load_inplace": true}, 400, "load_inplace"},
		{"unload no name", "/v1/unload_lora_adapter", map[string]any{}, 400, "'lora_name' needs to be provided to unload a LoRA adapter."},
		{"unload unknown", "/v1/unload_lora_adapter", map[string]any{"lora_name": "zz"}, 404, "The lora adapter 'zz' cannot be found."},
		{"wrong type", "/v1/load_lora_adapter", `{"lora_name": 3, "lora_path": "/x"}`, 400, "lora_name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := f.do(t, http.MethodPost, c.path, c.body)
			assert.Equal(t, c.status, code, "%s", body)
			var er ErrorResponse
			require.NoError(t, json.Unmarshal(body, &er), "%s", body)
			assert.Contains(t, er.Error.Message, c.msg)
			assert.Equal(t, c.status, er.Error.Code)
		})
	}
}
