package openai

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/rl"
)

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// TestChatRoleColon: the messages are rendered by role_colon, the ids and
// log-probs are the engine's for that prompt, and the reply is the
// renderer's parse.
func TestChatRoleColon(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	msgs := []map[string]any{{"role": "system", "content": "add"}, {"role": "user", "content": "1+2="}}
	var resp ChatResponse
	f.post(t, "/v1/chat/completions", map[string]any{"model": baseName, "messages": msgs, "max_tokens": 10, "seed": 3, "n": 2,
		"logprobs": true, "top_logprobs": 2, "return_token_ids": true}, &resp)
	b := f.h.bases[baseName]
	ids, err := b.render.GenerationPrompt([]chat.Message{{Role: "system", Content: "add"}, {Role: "user", Content: "1+2="}}, "")
	require.NoError(t, err)
	assert.Equal(t, ids, resp.PromptTokenIDs)
	assert.Equal(t, "chat.completion", resp.Object)
	stops := append(append([]int(nil), b.eos...), b.render.StopTokens()...)
	want := f.direct(t, ids, 2, rl.SamplingParams{MaxTokens: 10, Temperature: 1, Seed: i64(3), StopTokens: stops, StopStrings: b.render.StopStrings()})
	require.Len(t, resp.Choices, 2)
	for i, ch := range resp.Choices {
		w := want.Sequences[i]
		assert.Equal(t, w.Tokens[:len(ch.TokenIDs)], ch.TokenIDs)
		require.NotNil(t, ch.Logprobs)
		require.Len(t, ch.Logprobs.Content, len(ch.TokenIDs))
		for j, c := range ch.Logprobs.Content {
			assert.Equal(t, w.Logprobs[j], c.Logprob)
			assert.Len(t, c.TopLogprobs, 2)
			assert.Len(t, c.Bytes, len(c.Token))
		}
		msg, _, err := b.render.Parse(ch.TokenIDs)
		require.NoError(t, err)
		assert.Equal(t, "assistant", ch.Message.Role)
		assert.Equal(t, msg.Content, *ch.Message.Content)
		assert.Contains(t, []string{"stop", "length"}, ch.FinishReason)
	}
	assert.Equal(t, len(ids), resp.Usage.PromptTokens)
}

func TestTokenizeRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, text := range []string{"12+34=46", "7*8=56", "0"} {
		var tr TokenizeResponse
		f.post(t, "/tokenize", map[string]any{"prompt": text, "add_special_tokens": false, "return_token_strs": true}, &tr)
		assert.Equal(t, len(tr.Tokens), tr.Count)
		assert.Equal(t, context_, tr.MaxModelLen)
		assert.Len(t, tr.TokenStrs, tr.Count)
		var dr DetokenizeResponse
		f.post(t, "/detokenize", map[string]any{"tokens": tr.Tokens}, &dr)
		assert.Equal(t, text, dr.Prompt)
	}
	var tr TokenizeResponse
	f.post(t, "/tokenize", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}}, &tr)
	ids, err := f.h.bases[baseName].render.GenerationPrompt([]chat.Message{{Role: "user", Content: "hi"}}, "")
	require.NoError(t, err)
	assert.Equal(t, ids, tr.Tokens)
}
