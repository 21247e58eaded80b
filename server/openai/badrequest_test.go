package openai

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadRequests: every bad body gets vLLM's error envelope, the right
// status, and a message (and param) naming the field.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	long := make([]int, context_)
	cases := []struct {
		name, path, body string
		status           int
		param, msg       string
	}{
		{"not json", "/v1/completions", `{"prompt":`, 400, "", "not valid JSON"},
		{"empty body", "/v1/completions", ``, 400, "", "body is empty"},
		{"array body", "/v1/completions", `[1]`, 400, "", "JSON object"},
		{"no prompt", "/v1/completions", `{"model":"tiny"}`, 400, "prompt", "must be provided and non-empty"},
		{"empty prompt", "/v1/completions", `{"prompt":""}`, 400, "prompt", "non-empty"},
		{"empty id list", "/v1/completions", `{"prompt":[]}`, 400, "prompt", "non-empty"},
		{"prompt number", "/v1/completions", `{"prompt":3}`, 400, "prompt", "must be a string"},
		{"prompt mixed", "/v1/completions", `{"prompt":["a",[1]]}`, 400, "prompt", "only strings"},
		{"prompt float ids", "/v1/completions", `{"prompt":[1.5]}`, 400, "prompt", "only integers"},
		{"id out of vocab", "/v1/completions", `{"prompt":[100000]}`, 400, "prompt", "out of vocabulary"},
		{"max_tokens string", "/v1/completions", `{"prompt":[1],"max_tokens":"4"}`, 400, "max_tokens", "want an integer"},
		{"max_tokens over context", "/v1/completions", `{"prompt":[1,2],"max_tokens":47}`, 400, "max_tokens", "'max_tokens' is too large: 47"},
		{"prompt fills context", "/v1/completions", `{"prompt":` + ids(long) + `}`, 400, "prompt", "maximum context length is 48"},
		{"max_tokens zero", "/v1/completions", `{"prompt":[1],"max_tokens":0}`, 400, "max_tokens", "at least 1"},
		{"negative max_tokens", "/v1/completions", `{"prompt":[1],"max_tokens":-2}`, 400, "max_tokens", "at least 0"},
		{"n zero", "/v1/completions", `{"prompt":[1],"n":0}`, 400, "n", "n must be at least 1"},
		{"n too many", "/v1/completions", `{"prompt":[1],"n":1000}`, 400, "n", "limit"},
		{"temperature negative", "/v1/completions", `{"prompt":[1],"temperature":-1}`, 400, "temperature", "non-negative"},
		{"top_p zero", "/v1/completions", `{"prompt":[1],"top_p":0}`, 400, "top_p", "(0, 1]"},
		{"top_k -2", "/v1/completions", `{"prompt":[1],"top_k":-2}`, 400, "top_k", "top_k"},
		{"stop number", "/v1/completions", `{"prompt":[1],"stop":3}`, 400, "stop", "string or a list"},
		{"stop empty", "/v1/completions", `{"prompt":[1],"stop":[""]}`, 400, "stop", "empty"},
		{"stop id out of vocab", "/v1/completions", `{"prompt":[1],"stop_token_ids":[-1]}`, 400, "stop_token_ids", "out of vocabulary"},
		{"logprobs negative", "/v1/completions", `{"prompt":[1],"logprobs":-1}`, 400, "logprobs", "logprobs"},
		{"logprobs bool", "/v1/completions", `{"prompt":[1],"logprobs":true}`, 400, "logprobs", "want an integer"},
		{"stream_options without stream", "/v1/completions", `{"prompt":[1],"stream_options":{"include_usage":true}}`, 400, "stream_options", "only be defined when `stream=True`"},
		{"stream_options not an object", "/v1/completions", `{"prompt":[1],"stream":true,"stream_options":3}`, 400, "stream_options", "must be an object"},
		{"stream with prompt_logprobs", "/v1/completions", `{"prompt":[1],"stream":true,"prompt_logprobs":1}`, 400, "prompt_logprobs", "not available when `stream=True`"},
		{"beam search", "/v1/completions", `{"prompt":[1],"use_beam_search":true}`, 400, "use_beam_search", "not supported"},
		{"penalty", "/v1/completions", `{"prompt":[1],"presence_penalty":0.5}`, 400, "presence_penalty", "not supported"},
		{"seed string", "/v1/completions", `{"prompt":[1],"seed":"x"}`, 400, "seed", "want an integer"},
		{"unknown model", "/v1/completions", `{"prompt":[1],"model":"gpt-4"}`, 404, "model", "The model `gpt-4` does not exist."},
		{"chat no messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages", "at least one"},
		{"chat bad role", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"x"}]}`, 400, "messages", "wizard"},
		{"chat top_logprobs without logprobs", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}`, 400, "top_logprobs", "`logprobs` must be set to true"},
		{"chat max_completion_tokens over", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":100}`, 400, "max_completion_tokens", "too large"},
		{"chat tools", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"tools":[{}]}`, 400, "tools", "not supported"},
		{"chat unknown model", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"model":"m"}`, 404, "model", "does not exist"},
		{"tokenize nothing", "/tokenize", `{}`, 400, "prompt", "give prompt"},
		{"detokenize out of vocab", "/detokenize", `{"tokens":[99999]}`, 400, "tokens", "out of vocabulary"},
		{"detokenize strings", "/detokenize", `{"tokens":["a"]}`, 400, "tokens", "want"},
		{"tokenize unknown model", "/tokenize", `{"model":"m","prompt":"x"}`, 404, "model", "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := f.do(t, http.MethodPost, c.path, c.body)
			require.Equal(t, c.status, code, "%s", body)
			var er ErrorResponse
			require.NoError(t, json.Unmarshal(body, &er), "%s", body)
			assert.Contains(t, er.Error.Message, c.msg)
			assert.Equal(t, c.status, er.Error.Code)
			if c.param == "" {
				assert.Nil(t, er.Error.Param)
			} else if assert.NotNil(t, er.Error.Param, "%s", body) {
				assert.Equal(t, c.param, *er.Error.Param)
			}
			if c.param != "" {
				assert.Contains(t, er.Error.Message+" "+*er.Error.Param, c.param)
			}
		})
	}
}

func ids(v []int) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAuthRoutesAndBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name, method, path, auth, body string
		status                         int
		want                           string
	}{
		{"no key", "GET", "/v1/models", "", "", 401, `{"error":"Unauthorized"}`},
		{"wrong key", "GET", "/v1/models", "Bearer nope", "", 401, `{"error":"Unauthorized"}`},
		{"basic scheme", "GET", "/v1/models", "Basic " + testKey, "", 401, `{"error":"Unauthorized"}`},
		{"unknown route", "GET", "/v1/embeddings", "Bearer " + testKey, "", 404, `{"detail":"Not Found"}`},
		{"wrong method", "GET", "/v1/completions", "Bearer " + testKey, "", 405, `{"detail":"Method Not Allowed"}`},
		{"too large", "POST", "/v1/completions", "Bearer " + testKey, `{"prompt":"` + strings.Repeat("1", DefaultMaxBodyBytes) + `"}`, 413, "exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			assert.Equal(t, c.status, rec.Code)
			assert.Contains(t, rec.Body.String(), c.want)
		})
	}
}

func TestInFlightBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range cap(f.h.inflight) {
		f.h.inflight <- struct{}{}
	}
	code, body := f.do(t, http.MethodGet, "/v1/models", nil)
	assert.Equal(t, http.StatusTooManyRequests, code)
	assert.Contains(t, string(body), "retry later")
	for range cap(f.h.inflight) {
		<-f.h.inflight
	}
	code, _ = f.do(t, http.MethodGet, "/v1/models", nil)
	assert.Equal(t, http.StatusOK, code)
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	good := f.h.opts.Models[0]
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no model", Options{NewSampler: f.be.NewSampler}, "no model"},
		{"no sampler", Options{Models: []Model{good}}, "no NewSampler"},
		{"twice", Options{Models: []Model{good, good}, NewSampler: f.be.NewSampler}, "given twice"},
		{"no tokenizer", Options{Models: []Model{{Name: "x", MaxModelLen: 1, VocabSize: 1}}, NewSampler: f.be.NewSampler}, "no tokenizer"},
		{"bad renderer", Options{Models: []Model{{Name: "x", MaxModelLen: 1, VocabSize: 1, Tokenizer: good.Tokenizer, Renderer: "nope"}}, NewSampler: f.be.NewSampler}, "renderer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.opts)
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
