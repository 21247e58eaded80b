package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/tokenizer"
)

// events sends a streamed request and returns its server-sent events'
// data, checking the framing: text/event-stream, every event "data: …"
// followed by a blank line, the last one "[DONE]".
func (f *fixture) events(t *testing.T, path string, body any) [][]byte {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	rec := newRecorder()
	f.h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
	require.Equal(t, "text/event-stream; charset=utf-8", rec.Header().Get("Content-Type"))
	require.Positive(t, rec.flushes, "events are flushed")
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(rec.Body.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		require.True(t, strings.HasPrefix(line, "data: "), "line %q", line)
		out = append(out, []byte(strings.TrimPrefix(line, "data: ")))
		require.True(t, sc.Scan(), "an event ends with a blank line")
		require.Empty(t, sc.Text())
	}
	require.NotEmpty(t, out)
	require.Equal(t, "[DONE]", string(out[len(out)-1]))
	return out[:len(out)-1]
}

// TestCompletionStreamJoinsToTheResponse: a streamed completion (n = 2,
// echo, logprobs, return_token_ids, a stop string, usage) joins, choice
// by choice, to the unstreamed response of the same seed: text, token
// ids, log-probs entries, finish and stop reasons; each chunk holds one
// token; finish_reason only on a choice's last chunk; one usage chunk
// with no choices at the end.
func TestCompletionStreamJoinsToTheResponse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := map[string]any{"model": baseName, "prompt": "12+35=", "max_tokens": 14, "n": 2, "seed": 9, "temperature": 1,
		"logprobs": 2, "echo": true, "return_token_ids": true, "stop": []string{"4"}, "ignore_eos": true}
	var want CompletionResponse
	f.post(t, "/v1/completions", req, &want)
	require.Len(t, want.Choices, 2)

	req["stream"] = true
	req["stream_options"] = map[string]any{"include_usage": true}
	evs := f.events(t, "/v1/completions", req)
	type joined struct {
		text      string
		ids       []int
		prompt    []int
		lp        CompletionLogProbs
		finish    *string
		stop      any
		chunks    int
		afterDone bool
	}
	got := map[int]*joined{}
	var usage *Usage
	id := ""
	for i, e := range evs {
		var c CompletionStreamResponse
		require.NoError(t, json.Unmarshal(e, &c), "event %d: %s", i, e)
		if id == "" {
			id = c.ID
			assert.True(t, strings.HasPrefix(id, "cmpl-"), id)
		}
		assert.Equal(t, id, c.ID, "one id for the whole stream")
		assert.Equal(t, "text_completion", c.Object)
		assert.Equal(t, baseName, c.Model)
		if len(c.Choices) == 0 {
			require.Equal(t, len(evs)-1, i, "the usage chunk comes last")
			usage = c.Usage
			continue
		}
		require.Nil(t, c.Usage, "no usage per chunk without continuous_usage_stats")
		require.Len(t, c.Choices, 1)
		ch := c.Choices[0]
		j := got[ch.Index]
		if j == nil {
			j = &joined{}
			got[ch.Index] = j
		}
		require.False(t, j.afterDone, "choice %d has a chunk after its finish_reason", ch.Index)
		j.chunks++
		j.text += ch.Text
		j.ids = append(j.ids, ch.TokenIDs...)
		assert.LessOrEqual(t, len(ch.TokenIDs), 1, "one token per chunk")
		if ch.PromptTokenIDs != nil {
			require.Nil(t, j.prompt, "prompt ids only in the first chunk")
			j.prompt = ch.PromptTokenIDs
		}
		require.NotNil(t, ch.Logprobs)
		j.lp.Tokens = append(j.lp.Tokens, ch.Logprobs.Tokens...)
		j.lp.TokenLogprobs = append(j.lp.TokenLogprobs, ch.Logprobs.TokenLogprobs...)
		j.lp.TopLogprobs = append(j.lp.TopLogprobs, ch.Logprobs.TopLogprobs...)
		j.lp.TextOffset = append(j.lp.TextOffset, ch.Logprobs.TextOffset...)
		if ch.FinishReason != nil {
			j.finish, j.stop, j.afterDone = ch.FinishReason, ch.StopReason, true
		}
	}
	require.Len(t, got, 2)
	for _, w := range want.Choices {
		j := got[w.Index]
		require.NotNil(t, j, "choice %d", w.Index)
		assert.Equal(t, w.Text, j.text, "choice %d text", w.Index)
		assert.Equal(t, w.TokenIDs, j.ids, "choice %d token ids", w.Index)
		assert.Equal(t, w.PromptTokenIDs, j.prompt, "choice %d prompt ids", w.Index)
		assert.Equal(t, *w.Logprobs, j.lp, "choice %d log-probs", w.Index)
		require.NotNil(t, j.finish, "choice %d finish", w.Index)
		assert.Equal(t, w.FinishReason, *j.finish)
		assert.Equal(t, w.StopReason, j.stop)
		assert.Equal(t, max(len(w.TokenIDs), 1), j.chunks, "choice %d: one chunk per token", w.Index)
	}
	require.NotNil(t, usage)
	assert.Equal(t, want.Usage, *usage)
}

// TestCompletionStreamContinuousUsage: with continuous_usage_stats every
// chunk counts the completion tokens sent so far.
func TestCompletionStreamContinuousUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := map[string]any{"model": baseName, "prompt": []int{5, 9, 14}, "max_tokens": 6, "seed": 1, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"continuous_usage_stats": true}}
	evs := f.events(t, "/v1/completions", req)
	require.Len(t, evs, 7, "six token chunks and the usage chunk")
	for i, e := range evs {
		var c CompletionStreamResponse
		require.NoError(t, json.Unmarshal(e, &c))
		require.NotNil(t, c.Usage, "event %d", i)
		assert.Equal(t, 3, c.Usage.PromptTokens)
		assert.Equal(t, min(i+1, 6), c.Usage.CompletionTokens, "event %d", i)
		assert.Equal(t, c.Usage.PromptTokens+c.Usage.CompletionTokens, c.Usage.TotalTokens)
	}
}

// TestChatStreamJoinsToTheResponse: a streamed chat completion starts
// each choice with the assistant role and empty content; its content
// deltas, log-probs and token ids join to the unstreamed reply of the
// same seed.
func TestChatStreamJoinsToTheResponse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := map[string]any{"model": baseName, "messages": []map[string]string{{"role": "user", "content": "12+35?"}},
		"max_tokens": 10, "n": 2, "seed": 4, "logprobs": true, "top_logprobs": 1, "return_token_ids": true}
	var want ChatResponse
	f.post(t, "/v1/chat/completions", req, &want)
	req["stream"] = true
	evs := f.events(t, "/v1/chat/completions", req)
	content := map[int]string{}
	ids := map[int][]int{}
	lps := map[int][]ChatLogProbsContent{}
	finish := map[int]string{}
	roles := map[int]string{}
	var prompt []int
	for i, e := range evs {
		var c ChatStreamResponse
		require.NoError(t, json.Unmarshal(e, &c), "event %d: %s", i, e)
		assert.Equal(t, "chat.completion.chunk", c.Object)
		require.Len(t, c.Choices, 1, "no usage chunk without stream_options")
		if c.PromptTokenIDs != nil {
			require.Zero(t, i, "prompt ids in the first chunk")
			prompt = c.PromptTokenIDs
		}
		ch := c.Choices[0]
		if ch.Delta.Role != "" {
			_, seen := roles[ch.Index]
			require.False(t, seen)
			require.NotNil(t, ch.Delta.Content)
			assert.Empty(t, *ch.Delta.Content)
			roles[ch.Index] = ch.Delta.Role
			continue
		}
		require.Contains(t, roles, ch.Index, "the role comes first")
		require.NotContains(t, finish, ch.Index, "nothing after finish_reason")
		if ch.Delta.Content != nil {
			content[ch.Index] += *ch.Delta.Content
		}
		ids[ch.Index] = append(ids[ch.Index], ch.TokenIDs...)
		if ch.Logprobs != nil {
			lps[ch.Index] = append(lps[ch.Index], ch.Logprobs.Content...)
		}
		if ch.FinishReason != nil {
			finish[ch.Index] = *ch.FinishReason
		}
	}
	assert.Equal(t, want.PromptTokenIDs, prompt)
	for _, w := range want.Choices {
		assert.Equal(t, "assistant", roles[w.Index])
		assert.Equal(t, *w.Message.Content, content[w.Index], "choice %d", w.Index)
		assert.Equal(t, w.TokenIDs, ids[w.Index], "choice %d", w.Index)
		assert.Equal(t, w.Logprobs.Content, lps[w.Index], "choice %d", w.Index)
		assert.Equal(t, w.FinishReason, finish[w.Index], "choice %d", w.Index)
	}
}

// TestTextDeltas: over a byte-level tokenizer and text with two-, three-
// and four-byte characters, the pieces join to the text (or to any cut of
// it, as a stop string makes), every prefix of pieces ends on a character
// boundary, and an uncut text is handed out as the stream decoder gives
// it: nothing is held back beyond an incomplete character.
func TestTextDeltas(t *testing.T) {
	t.Parallel()
	j, err := os.ReadFile(filepath.Join("..", "..", "tokenizer", "testdata", "bytelevel.json"))
	require.NoError(t, err)
	tok, err := tokenizer.Parse(j, nil)
	require.NoError(t, err)
	for _, s := range []string{"plain ascii text", "héllo wörld", "数学 12+35=47", "ok 🙂🙃 done", "x"} {
		ids := tok.Encode(s, tokenizer.EncodeOptions{})
		full, err := tok.Decode(ids, true)
		require.NoError(t, err)
		for _, text := range []string{full, full[:len(full)/2], ""} {
			if !utf8.ValidString(text) {
				continue
			}
			pieces, err := textDeltas(tok, true, ids, text)
			require.NoError(t, err)
			require.Len(t, pieces, len(ids))
			assert.Equal(t, text, strings.Join(pieces, ""), "%q cut to %q", s, text)
			sofar := ""
			for _, p := range pieces {
				sofar += p
				assert.True(t, utf8.ValidString(sofar), "%q: prefix %q", s, sofar)
			}
		}
		// Uncut, piece i is all the tokens up to i decode to, less an
		// incomplete character at the end.
		pieces, err := textDeltas(tok, true, ids, full)
		require.NoError(t, err)
		sofar := ""
		for i := range ids {
			sofar += pieces[i]
			upto, err := tok.Decode(ids[:i+1], true)
			require.NoError(t, err)
			upto = strings.TrimRight(upto, "\uFFFD")
			if i < len(ids)-1 {
				assert.Equal(t, commonPrefix(upto, full), len(sofar), "%q after token %d", s, i)
			}
		}
	}
}

// flushRecorder is a ResponseRecorder that counts flushes.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushes int
}

func newRecorder() *flushRecorder { return &flushRecorder{ResponseRecorder: httptest.NewRecorder()} }

func (r *flushRecorder) Flush() {
	r.flushes++
	r.ResponseRecorder.Flush()
}
