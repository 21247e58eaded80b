package openai

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// prompt_logprobs (vLLM's completion field, which backend/openai sends):
// null first, then per position the prompt token and the k most likely
// tokens ranked 1 … k, with the engine's prompt log-probs.
func TestPromptLogprobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	prompt := []int{5, 9, 14, 3, 7}
	for _, k := range []int{0, 3} {
		var resp CompletionResponse
		f.post(t, "/v1/completions", map[string]any{"model": baseName, "prompt": prompt, "max_tokens": 1, "temperature": 1, "prompt_logprobs": k}, &resp)
		require.Len(t, resp.Choices, 1)
		var rows []map[string]promptLogEntry
		require.NoError(t, json.Unmarshal(resp.Choices[0].PromptLogprobs, &rows), "%s", resp.Choices[0].PromptLogprobs)
		require.Len(t, rows, len(prompt))
		assert.Nil(t, rows[0], "the first prompt token has none")
		want := f.direct(t, prompt, 1, rl.SamplingParams{MaxTokens: 1, Temperature: 1, PromptLogprobs: true, TopKPromptLogprobs: k})
		for i := 1; i < len(prompt); i++ {
			e, ok := rows[i][strconv.Itoa(prompt[i])]
			require.True(t, ok, "position %d lacks the prompt token", i)
			assert.InDelta(t, want.PromptLogprobs[i], e.Logprob, 1e-12, "position %d", i)
			ranked := 0
			for id, e := range rows[i] {
				if e.Rank == nil {
					assert.Equal(t, strconv.Itoa(prompt[i]), id, "only the prompt token may be unranked")
					continue
				}
				ranked++
				a := want.TopKPromptLogprobs[i][*e.Rank-1]
				assert.Equal(t, strconv.Itoa(a.Token), id)
				assert.InDelta(t, a.Logprob, e.Logprob, 1e-12)
			}
			assert.Equal(t, k, ranked, "position %d", i)
		}
	}
	code, body := f.do(t, "POST", "/v1/completions", map[string]any{"model": baseName, "prompt": prompt, "max_tokens": 1, "prompt_logprobs": 21})
	assert.Equal(t, 400, code)
	assert.Contains(t, string(body), "prompt_logprobs")
	code, body = f.do(t, "POST", "/v1/chat/completions", map[string]any{"model": baseName, "messages": []map[string]string{{"role": "user", "content": "hi"}}, "prompt_logprobs": 1})
	assert.Equal(t, 400, code, "chat does not answer prompt_logprobs: %s", body)
}
