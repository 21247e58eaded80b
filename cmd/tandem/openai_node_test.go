package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/internal/hforacle"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// The official OpenAI Node SDK (npm openai, installed by .ci/hf-oracle)
// against tandem serve's OpenAI-compatible surface on the shipped model:
// models.list, completions with token-id and text prompts, chat
// completions with log-probs, and an error. Its token-id completion is the
// one a plain HTTP request with the same seed gets.
func TestOpenAINodeSDK(t *testing.T) {
	t.Parallel()
	nodeModules := hforacle.NodePackage(t, "openai")
	const key = "test-key-openai-123456"
	ctx := t.Context()
	url := startServe(t, "-api-key", key, "-store", t.TempDir(), "-threads", "1")

	ids := arithmetic.Problem{A: 12, B: 35}.PromptTokens()
	idsJSON, _ := json.Marshal(ids)
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "openai_sdk.cjs"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules, "TANDEM_URL="+url, "TANDEM_KEY="+key,
		"TANDEM_MODEL="+basemodel.Name, "TANDEM_PROMPT_IDS="+string(idsJSON))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var got struct {
		SDK    string
		Models []string
		ByIDs  []struct {
			Text          string
			FinishReason  string    `json:"finish_reason"`
			TokenIDs      []int     `json:"token_ids"`
			TokenLogprobs []float64 `json:"token_logprobs"`
		} `json:"by_ids"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
		Text struct {
			Text         string
			FinishReason string `json:"finish_reason"`
		}
		Chat struct {
			Role, Content string
			FinishReason  string `json:"finish_reason"`
			Logprobs      []struct {
				Logprob float64
				Top     int
			}
		}
		Error *struct {
			Status  int
			Message string
		}
		Stream []struct {
			Text          string
			FinishReason  string    `json:"finish_reason"`
			TokenIDs      []int     `json:"token_ids"`
			TokenLogprobs []float64 `json:"token_logprobs"`
			Chunks        int
		}
		StreamUsage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"stream_usage"`
		ChatStream struct {
			Role, Content string
			FinishReason  string `json:"finish_reason"`
			Chunks        int
		} `json:"chat_stream"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	t.Logf("openai %s: %s", got.SDK, out)
	assert.Contains(t, got.Models, basemodel.Name)

	// The same request by plain HTTP: same seed, same tokens and log-probs.
	body := fmt.Sprintf(`{"model":%q,"prompt":%s,"n":2,"max_tokens":5,"temperature":1,"seed":11,"logprobs":1,"return_token_ids":true}`, basemodel.Name, idsJSON)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var plain struct {
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
			Logprobs struct {
				TokenLogprobs []float64 `json:"token_logprobs"`
			}
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&plain))
	require.Len(t, got.ByIDs, 2)
	require.Len(t, plain.Choices, 2)
	for i, c := range got.ByIDs {
		assert.Equal(t, plain.Choices[i].TokenIDs, c.TokenIDs, "choice %d", i)
		assert.Equal(t, plain.Choices[i].Logprobs.TokenLogprobs, c.TokenLogprobs, "choice %d", i)
		assert.Len(t, c.TokenLogprobs, len(c.TokenIDs))
		assert.Contains(t, []string{"stop", "length"}, c.FinishReason)
	}
	assert.Equal(t, len(ids), got.Usage.PromptTokens)

	assert.Equal(t, "stop", got.Text.FinishReason, "greedy stops at the newline: %q", got.Text.Text)
	assert.NotContains(t, got.Text.Text, "\n")
	assert.Equal(t, "assistant", got.Chat.Role)
	assert.NotEmpty(t, got.Chat.Logprobs)
	for _, lp := range got.Chat.Logprobs {
		assert.LessOrEqual(t, lp.Logprob, 0.0)
		assert.Equal(t, 2, lp.Top)
	}
	// The SDK's stream reader joins tandem's chunks to the same completion.
	require.Len(t, got.Stream, 2)
	for i, c := range got.Stream {
		assert.Equal(t, got.ByIDs[i].Text, c.Text, "streamed choice %d", i)
		assert.Equal(t, got.ByIDs[i].TokenIDs, c.TokenIDs, "streamed choice %d", i)
		assert.Equal(t, got.ByIDs[i].TokenLogprobs, c.TokenLogprobs, "streamed choice %d", i)
		assert.Equal(t, got.ByIDs[i].FinishReason, c.FinishReason, "streamed choice %d", i)
		assert.Equal(t, len(c.TokenIDs), c.Chunks, "one chunk per token")
	}
	assert.Equal(t, got.Usage, got.StreamUsage)
	assert.Equal(t, "assistant", got.ChatStream.Role)
	assert.Equal(t, got.Chat.Content, got.ChatStream.Content)
	assert.Equal(t, got.Chat.FinishReason, got.ChatStream.FinishReason)
	assert.Greater(t, got.ChatStream.Chunks, 1)
	require.NotNil(t, got.Error, "an unknown model is an error")
	assert.Equal(t, http.StatusNotFound, got.Error.Status)
	assert.Contains(t, got.Error.Message, "no-such-model")

}
