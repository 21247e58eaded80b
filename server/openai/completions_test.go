package openai

import (
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

func maxGap(a, b []float64) float64 {
	g := 0.0
	for i := range a {
		g = math.Max(g, math.Abs(a[i]-b[i]))
	}
	return g
}

func deref(ps []*float64) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}

// TestTokenIDPromptsMatchTheEngine: token-id prompts give token_ids and
// logprobs equal to the engine sampler's own, for each sampling setting.
func TestTokenIDPromptsMatchTheEngine(t *testing.T) {
	t.Parallel()
	prompt := []int{5, 9, 14, 3, 7}
	cases := []struct {
		name string
		req  map[string]any
		p    rl.SamplingParams
	}{
		{"greedy", map[string]any{"temperature": 0}, rl.SamplingParams{Temperature: 0}},
		{"temperature 1", map[string]any{"temperature": 1}, rl.SamplingParams{Temperature: 1}},
		{"top_k top_p", map[string]any{"temperature": 0.7, "top_k": 5, "top_p": 0.9}, rl.SamplingParams{Temperature: 0.7, TopK: 5, TopP: 0.9}},
		{"top_k -1 disables", map[string]any{"temperature": 1.3, "top_k": -1}, rl.SamplingParams{Temperature: 1.3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			req := map[string]any{"model": baseName, "prompt": prompt, "max_tokens": 12, "n": 3, "seed": 42,
				"logprobs": 0, "return_token_ids": true, "ignore_eos": true}
			for k, v := range c.req {
				req[k] = v
			}
			var resp CompletionResponse
			f.post(t, "/v1/completions", req, &resp)
			p := c.p
			p.MaxTokens, p.Seed = 12, i64(42)
			want := f.direct(t, prompt, 3, p)
			require.Len(t, resp.Choices, 3)
			total := 0
			for i, ch := range resp.Choices {
				assert.Equal(t, i, ch.Index)
				assert.Equal(t, prompt, ch.PromptTokenIDs)
				assert.Equal(t, want.Sequences[i].Tokens, ch.TokenIDs)
				require.NotNil(t, ch.Logprobs)
				got := deref(ch.Logprobs.TokenLogprobs)
				assert.Equal(t, want.Sequences[i].Logprobs, got)
				t.Logf("choice %d: max log-prob gap %g", i, maxGap(want.Sequences[i].Logprobs, got))
				assert.Len(t, ch.Logprobs.Tokens, len(ch.TokenIDs))
				assert.Len(t, ch.Logprobs.TopLogprobs, len(ch.TokenIDs))
				assert.Equal(t, "length", ch.FinishReason)
				total += len(ch.TokenIDs)
			}
			assert.Equal(t, len(prompt), resp.Usage.PromptTokens)
			assert.Equal(t, total, resp.Usage.CompletionTokens)
			assert.Equal(t, total+len(prompt), resp.Usage.TotalTokens)
			assert.Equal(t, "text_completion", resp.Object)
			assert.Equal(t, baseName, resp.Model)
		})
	}
}

func TestSeedDeterminism(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := map[string]any{"prompt": "1+2=", "max_tokens": 10, "seed": 7, "n": 2, "return_token_ids": true, "ignore_eos": true}
	var a, b CompletionResponse
	f.post(t, "/v1/completions", req, &a)
	f.post(t, "/v1/completions", req, &b)
	for i := range a.Choices {
		assert.Equal(t, a.Choices[i].TokenIDs, b.Choices[i].TokenIDs)
		assert.Equal(t, a.Choices[i].Text, b.Choices[i].Text)
	}
	// Without return_token_ids the ids are left out.
	delete(req, "return_token_ids")
	var c CompletionResponse
	f.post(t, "/v1/completions", req, &c)
	assert.Nil(t, c.Choices[0].TokenIDs)
	assert.Nil(t, c.Choices[0].PromptTokenIDs)
	assert.Equal(t, a.Choices[0].Text, c.Choices[0].Text)
}

// TestStopTokenIDs: a stop token ends the sequence (kept in token_ids),
// finish_reason stop, stop_reason the id, its text left out of the text.
func TestStopTokenIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	prompt := []int{5, 9, 14, 3, 7}
	var free CompletionResponse
	f.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 20, "temperature": 0, "return_token_ids": true, "ignore_eos": true}, &free)
	toks := free.Choices[0].TokenIDs
	require.GreaterOrEqual(t, len(toks), 4)
	stop := toks[3]
	first := 0
	for toks[first] != stop {
		first++
	}
	var resp CompletionResponse
	f.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 20, "temperature": 0, "return_token_ids": true,
		"ignore_eos": true, "stop_token_ids": []int{stop}, "logprobs": 0}, &resp)
	ch := resp.Choices[0]
	assert.Equal(t, toks[:first+1], ch.TokenIDs)
	assert.Equal(t, "stop", ch.FinishReason)
	assert.EqualValues(t, stop, ch.StopReason)
	want, err := f.h.bases[baseName].Tokenizer.Decode(toks[:first], true)
	require.NoError(t, err)
	assert.Equal(t, want, ch.Text)
}

// TestStopStrings: the text ends before the stop string (or after it with
// include_stop_str_in_output); token_ids end at the token completing it.
func TestStopStrings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	prompt := []int{5, 9, 14, 3, 7}
	var free CompletionResponse
	f.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 20, "temperature": 0, "return_token_ids": true, "ignore_eos": true}, &free)
	text := []rune(free.Choices[0].Text)
	require.GreaterOrEqual(t, len(text), 6)
	stop := string(text[3:5])
	for _, include := range []bool{false, true} {
		var resp CompletionResponse
		f.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 20, "temperature": 0, "return_token_ids": true,
			"ignore_eos": true, "stop": stop, "include_stop_str_in_output": include}, &resp)
		ch := resp.Choices[0]
		full := free.Choices[0].Text
		at := indexOf(full, stop)
		want := full[:at]
		if include {
			want = full[:at+len(stop)]
		}
		assert.Equal(t, want, ch.Text, "include %v", include)
		assert.Equal(t, "stop", ch.FinishReason)
		assert.Equal(t, stop, ch.StopReason)
		assert.Equal(t, free.Choices[0].TokenIDs[:len(ch.TokenIDs)], ch.TokenIDs)
	}
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestBatchOfPromptsAndEcho(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var resp CompletionResponse
	f.post(t, "/v1/completions", map[string]any{"prompt": []string{"1+1=", "2+2="}, "n": 2, "max_tokens": 4, "seed": 1,
		"echo": true, "logprobs": 2, "ignore_eos": true}, &resp)
	require.Len(t, resp.Choices, 4)
	for i, ch := range resp.Choices {
		assert.Equal(t, i, ch.Index)
		prompt := []string{"1+1=", "2+2="}[i/2]
		assert.Equal(t, prompt, ch.Text[:len(prompt)])
		lp := ch.Logprobs
		require.NotNil(t, lp)
		assert.Nil(t, lp.TokenLogprobs[0], "the first prompt token has no log-prob")
		assert.Nil(t, lp.TopLogprobs[0])
		for j := 1; j < len(lp.Tokens); j++ {
			require.NotNil(t, lp.TokenLogprobs[j])
			assert.LessOrEqual(t, *lp.TokenLogprobs[j], 0.0)
			assert.GreaterOrEqual(t, len(lp.TopLogprobs[j]), 1)
			assert.LessOrEqual(t, len(lp.TopLogprobs[j]), 3)
			assert.Greater(t, lp.TextOffset[j], lp.TextOffset[j-1]-1)
		}
	}
	want := 0
	for _, p := range []string{"1+1=", "2+2="} {
		var tr TokenizeResponse
		f.post(t, "/tokenize", map[string]any{"prompt": p}, &tr)
		want += tr.Count
	}
	assert.Equal(t, want, resp.Usage.PromptTokens, "each prompt counted once, not n times")
}

func TestMaxTokensDefaultAndContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var resp CompletionResponse
	f.post(t, "/v1/completions", map[string]any{"prompt": []int{1, 2, 3}, "ignore_eos": true, "return_token_ids": true}, &resp)
	assert.Len(t, resp.Choices[0].TokenIDs, defaultMaxTokens)
	code, body := f.do(t, http.MethodPost, "/v1/completions", map[string]any{"prompt": []int{1, 2, 3}, "max_tokens": context_})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, string(body), "maximum context length is 48")
}
