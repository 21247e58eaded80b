package openai

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixtureBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func TestConformanceCompletionRequest(t *testing.T) {
	t.Parallel()
	req, err := decodeCompletion(fixtureBytes(t, "completion_request.json"))
	require.NoError(t, err)
	assert.Equal(t, "tandem-run1-v000017", req.Model)
	assert.Equal(t, []PromptItem{{IDs: []int{1, 15, 27, 8}}}, req.Prompt.Items)
	assert.Equal(t, 16, *req.MaxTokens)
	assert.Equal(t, 2, *req.N)
	assert.Equal(t, 1.0, *req.Temperature)
	assert.Equal(t, 1.0, *req.TopP)
	assert.Equal(t, -1, *req.TopK)
	assert.Equal(t, int64(1234), *req.Seed)
	assert.Equal(t, StopList{"\n\n"}, req.Stop)
	assert.Equal(t, []int{2}, req.StopTokenIDs)
	assert.Equal(t, 0, *req.Logprobs)
	assert.False(t, req.Echo)
	assert.True(t, *req.ReturnTokenIDs)
	assert.True(t, req.IncludeStopStrInOutput)
	assert.False(t, *req.SkipSpecialTokens)
	assert.True(t, req.IgnoreEOS)
	require.NoError(t, unsupported(&req.samplingFields), "neutral penalties and an unknown field (cache_salt) are accepted")
}

func TestConformanceChatAndLoRARequests(t *testing.T) {
	t.Parallel()
	req, err := decodeChat(fixtureBytes(t, "chat_request.json"))
	require.NoError(t, err)
	require.Len(t, req.Messages, 2)
	assert.Equal(t, "system", req.Messages[0].Role)
	assert.Equal(t, "1+2=", req.Messages[1].Content, "content parts are joined")
	assert.True(t, req.Logprobs)
	assert.Equal(t, 2, *req.TopLogprobs)
	assert.Equal(t, 8, *req.MaxCompletionTokens)
	assert.Equal(t, StopList{"\n"}, req.Stop)
	assert.Equal(t, 0.5, *req.Temperature)

	var lr LoadLoRARequest
	require.NoError(t, decode(fixtureBytes(t, "load_lora_request.json"), &lr))
	assert.Equal(t, LoadLoRARequest{LoraName: "tandem-run1-v000017", LoraPath: "/shared/adapters/v17"}, lr)
}

// keys lists the keys of a JSON object and of the objects nested in it
// (the first element of lists), as dotted paths.
func keys(t *testing.T, b []byte) []string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if prefix == "" || !isDynamicKey(prefix) {
					out = append(out, prefix+k)
					walk(prefix+k+".", e)
				}
			}
		case []any:
			if len(x) > 0 {
				walk(prefix, x[0])
			}
		}
	}
	walk("", v)
	slices.Sort(out)
	return out
}

// isDynamicKey: top_logprobs maps of completions are keyed by token text.
func isDynamicKey(prefix string) bool { return prefix == "choices.logprobs.top_logprobs." }

// TestConformanceResponses: the handler's response types carry exactly
// the fixtures' keys, and read back to the same values.
func TestConformanceResponses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file string
		v    any
	}{
		{"completion_response.json", &CompletionResponse{}},
		{"chat_response.json", &ChatResponse{}},
		{"completion_stream_response.json", &CompletionStreamResponse{}},
		{"chat_stream_response.json", &ChatStreamResponse{}},
		{"models_response.json", &ModelList{}},
		{"error_response.json", &ErrorResponse{}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			b := fixtureBytes(t, c.file)
			require.NoError(t, json.Unmarshal(b, c.v))
			again, err := json.Marshal(c.v)
			require.NoError(t, err)
			assert.Equal(t, keys(t, b), keys(t, again))
			assert.JSONEq(t, string(b), string(again))
		})
	}
}
