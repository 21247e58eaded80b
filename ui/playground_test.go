package ui

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/engine/safetensors"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/runlog"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// playRun is a run folder trained on a tiny random base (config.json's
// base_model) with one sampler checkpoint whose adapter moves the output
// head, so its completions differ from the base's.
type playRun struct {
	root, dir, base, uri, adapter string
}

func newPlayRun(t testing.TB, root, name string) playRun {
	t.Helper()
	m := enginetest.Model(t, 1, 64, 5)
	p := playRun{root: root, dir: filepath.Join(root, name), base: filepath.Join(root, "tiny.safetensors")}
	require.NoError(t, engine.SaveBase(p.base, m, safetensors.F32))
	rl, err := runlog.Open(p.dir, map[string]any{"name": name, "base_model": p.base, "rl": map[string]any{"steps": 1}})
	require.NoError(t, err)
	require.NoError(t, rl.Log(runlog.Record{Step: 0, Version: 1, Staleness: map[int]int{0: 2}}))
	require.NoError(t, rl.Close())
	ad, err := engine.NewAdapter[float32](m.Config, engine.LoraConfig{Rank: 2, Alpha: 2, Seed: 3, TrainUnembed: true})
	require.NoError(t, err)
	for i := range ad.Unembed.B {
		ad.Unembed.B[i] = float32(i%7) - 3 // far from zero: the head changes
	}
	st, err := checkpoint.Open(filepath.Join(p.dir, CheckpointsDir))
	require.NoError(t, err)
	ck, err := st.Save(context.Background(), checkpoint.Meta{Run: name, Name: "final", Kind: policy.SamplerWeights, Version: 1, Step: 1},
		func(dir string) error { return engine.SaveAdapter(dir, ad, "tiny") })
	require.NoError(t, err)
	p.uri, p.adapter = ck.URI().String(), ck.Dir
	return p
}

// reference samples the way the playground promises, straight from the
// engine: greedy, newline-stopped.
func (p playRun) reference(t *testing.T, adapter, prompt string, maxTokens int) string {
	t.Helper()
	m, err := engine.LoadBase[float32](p.base)
	require.NoError(t, err)
	s, err := engine.NewSampler(m, engine.SamplerOptions{})
	require.NoError(t, err)
	if adapter != "" {
		require.NoError(t, s.LoadAdapter(adapter))
	}
	ids, err := arithmetic.EncodePrompt(prompt)
	require.NoError(t, err)
	seqs, _, err := s.Sample(t.Context(), ids, 1, engine.SamplingParams{MaxTokens: maxTokens, Seed: 1, StopTokens: []int{engine.Newline, engine.EOS}})
	require.NoError(t, err)
	return arithmetic.Decode(seqs[0].Tokens)
}

func post(t *testing.T, h http.Handler, target string, form url.Values, header ...string) (int, sampleAnswer) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	var ans sampleAnswer
	if rec.Result().Header.Get("Content-Type") == "application/json" {
		require.NoError(t, json.Unmarshal(b, &ans), string(b))
	} else {
		ans.Error = string(b)
	}
	return rec.Code, ans
}

func TestPlaygroundSamplesCheckpoint(t *testing.T) {
	t.Parallel()
	p := newPlayRun(t, t.TempDir(), "play")
	h, err := New(p.root, Options{})
	require.NoError(t, err)
	const prompt = "What is 2 + 3?"
	form := url.Values{"checkpoint": {p.uri}, "prompt": {prompt}, "max_tokens": {"12"}, "temperature": {"0"}, "n": {"2"}}
	code, ans := post(t, h, "/runs/play/sample", form)
	require.Equal(t, http.StatusOK, code, ans.Error)
	require.Len(t, ans.Completions, 2)
	want := p.reference(t, p.adapter, prompt, 12)
	assert.Equal(t, want, ans.Completions[0].Text, "the checkpoint's greedy completion")
	assert.Equal(t, want, ans.Completions[1].Text)
	assert.Equal(t, p.uri, ans.Checkpoint)

	form.Set("checkpoint", "")
	code, base := post(t, h, "/runs/play/sample", form)
	require.Equal(t, http.StatusOK, code, base.Error)
	assert.Equal(t, p.reference(t, "", prompt, 12), base.Completions[0].Text, "the base model's")
	assert.NotEqual(t, want, base.Completions[0].Text, "the adapter was served, not the base")

	_, page := get(t, h, "/runs/play/checkpoints")
	assert.Contains(t, page, `<option value="`+p.uri+`">`)
	assert.Contains(t, page, `id="sample-form"`)
}

func TestPlaygroundRefusesBadRequests(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := newPlayRun(t, root, "play")
	newPlayRun(t, t.TempDir(), "other") // a checkpoint outside root
	h, err := New(root, Options{})
	require.NoError(t, err)
	ok := url.Values{"checkpoint": {p.uri}, "prompt": {"What is 1 + 1?"}, "max_tokens": {"4"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for kk, vv := range ok {
			f[kk] = vv
		}
		f.Set(k, v)
		return f
	}
	tests := []struct {
		name   string
		target string
		form   url.Values
		header []string
		code   int
		want   string
	}{
		{"empty prompt", "/runs/play/sample", with("prompt", ""), nil, 400, "prompt is empty"},
		{"long prompt", "/runs/play/sample", with("prompt", strings.Repeat("1", MaxPromptBytes+1)), nil, 400, "at most"},
		{"max tokens too big", "/runs/play/sample", with("max_tokens", "100000"), nil, 400, "max_tokens"},
		{"max tokens zero", "/runs/play/sample", with("max_tokens", "0"), nil, 400, "max_tokens"},
		{"temperature NaN", "/runs/play/sample", with("temperature", "NaN"), nil, 400, "temperature"},
		{"temperature negative", "/runs/play/sample", with("temperature", "-1"), nil, 400, "temperature"},
		{"n too big", "/runs/play/sample", with("n", "9"), nil, 400, "n \"9\""},
		{"seed not a number", "/runs/play/sample", with("seed", "x"), nil, 400, "seed"},
		{"dotdot name", "/runs/play/sample", with("checkpoint", "tinker://play/sampler_weights/.."), nil, 400, "checkpoint"},
		{"dotdot run", "/runs/play/sample", with("checkpoint", "tinker://../sampler_weights/final"), nil, 400, "checkpoint"},
		{"encoded slash", "/runs/play/sample", with("checkpoint", "tinker://play/sampler_weights/..%2f..%2fother"), nil, 400, "checkpoint"},
		{"other run's store", "/runs/play/sample", with("checkpoint", "tinker://other/sampler_weights/final"), nil, 400, "not found"},
		{"local path", "/runs/play/sample", with("checkpoint", p.adapter), nil, 400, "tinker://"},
		{"file uri", "/runs/play/sample", with("checkpoint", "file:///etc"), nil, 400, "tinker://"},
		{"absolute escape", "/runs/play/sample", with("checkpoint", "/etc/passwd"), nil, 400, "tinker://"},
		{"unknown kind", "/runs/play/sample", with("checkpoint", "tinker://play/nope/final"), nil, 400, "checkpoint"},
		{"missing checkpoint", "/runs/play/sample", with("checkpoint", "tinker://play/sampler_weights/none"), nil, 400, "not found"},
		{"prompt off the vocabulary", "/runs/play/sample", with("prompt", "ünïcode ☃"), nil, 400, "prompt"},
		{"run escape", "/runs/%2e%2e/sample", ok, nil, 400, "bad name"},
		{"no run", "/runs/nope/sample", ok, nil, 404, "no such run"},
		{"cross-site", "/runs/play/sample", ok, []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross-site"},
		{"foreign origin", "/runs/play/sample", ok, []string{"Origin", "http://evil.example"}, 403, "origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, ans := post(t, h, tt.target, tt.form, tt.header...)
			assert.Equal(t, tt.code, code, ans.Error)
			assert.Contains(t, ans.Error, tt.want)
			assert.Empty(t, ans.Completions)
		})
	}
	code, ans := post(t, h, "/runs/play/sample", ok, "Origin", "http://example.com")
	assert.Equal(t, http.StatusOK, code, "same origin (httptest's Host is example.com): %s", ans.Error)
}

func TestPlaygroundBodyBounded(t *testing.T) {
	t.Parallel()
	p := newPlayRun(t, t.TempDir(), "play")
	h, err := New(p.root, Options{})
	require.NoError(t, err)
	code, ans := post(t, h, "/runs/play/sample", url.Values{"prompt": {strings.Repeat("1", 2*maxSampleBody)}})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, ans.Error, "at most")
}

// blockingSampler holds every call until its release channel closes or the
// call's context ends; entered reports each call once it holds.
type blockingSampler struct {
	entered chan struct{}
	release chan struct{}
}

func (b blockingSampler) Sample(ctx context.Context, req SampleRequest) ([]Completion, error) {
	select {
	case b.entered <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case <-b.release:
		return []Completion{{Text: "ok"}}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func TestPlaygroundOneSampleAtATime(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fixture{name: "r", steps: 2}.write(t, root)
	bs := blockingSampler{entered: make(chan struct{}), release: make(chan struct{})}
	h, err := New(root, Options{Sampler: bs})
	require.NoError(t, err)
	form := url.Values{"prompt": {"What is 1 + 1?"}}

	first := make(chan int, 1) // the first request's status
	go func() {
		req := httptest.NewRequest(http.MethodPost, "/runs/r/sample", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		first <- rec.Code
	}()
	<-bs.entered // the first request holds the playground

	// A second request waits; when its client goes, it answers 503 and
	// never reaches the sampler.
	ctx, cancel := context.WithCancel(t.Context())
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/runs/r/sample", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	second := make(chan struct{})
	go func() {
		defer close(second)
		h.ServeHTTP(rec, req)
	}()
	cancel()
	<-second
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "waiting for another sample")

	close(bs.release)
	assert.Equal(t, http.StatusOK, <-first)
}

func TestPlaygroundRefusesHFRuns(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, err := runlog.Open(filepath.Join(root, "hf"), map[string]any{"model": "/models/qwen3"})
	require.NoError(t, err)
	h, err := New(root, Options{})
	require.NoError(t, err)
	code, ans := post(t, h, "/runs/hf/sample", url.Values{"prompt": {"hi"}})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, ans.Error, "Hugging Face model folder /models/qwen3")
}

func FuzzParseSampleForm(f *testing.F) {
	f.Add("What is 1 + 2?", "24", "1", "1", "4")
	f.Add("", "0", "NaN", "-1", "9")
	f.Add("x", "1e3", "Inf", "9007199254740993", "")
	f.Fuzz(func(t *testing.T, prompt, maxTokens, temp, seed, n string) {
		req, err := parseSampleForm(url.Values{"prompt": {prompt}, "max_tokens": {maxTokens}, "temperature": {temp}, "seed": {seed}, "n": {n}})
		if err != nil {
			require.ErrorIs(t, err, ErrBadSample)
			return
		}
		// Whatever passes is inside the documented bounds.
		require.NotEmpty(t, req.Prompt)
		require.LessOrEqual(t, len(req.Prompt), MaxPromptBytes)
		require.True(t, req.MaxTokens >= 1 && req.MaxTokens <= MaxSampleTokens, req.MaxTokens)
		require.True(t, req.N >= 1 && req.N <= MaxSampleN, req.N)
		require.True(t, req.Temperature >= 0 && req.Temperature <= MaxTemperature, req.Temperature)
		require.GreaterOrEqual(t, req.Seed, int64(0))
	})
}
