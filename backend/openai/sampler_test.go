package openai

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ref(v int) policy.Ref {
	return policy.Ref{Run: "run", Version: policy.Version(v), URI: fmt.Sprintf("file:///ckpt/run/v%d", v)}
}

func seed(s int64) *int64 { return &s }

func TestNewLearnsModelAndLength(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, func(o *Options) { o.APIKey = "k" })
	assert.Equal(t, "Qwen/Qwen3-0.6B", s.BaseModel())
	assert.Equal(t, 4096, s.MaxModelLen())
	assert.Equal(t, policy.Version(0), s.Version())
	// The probe: temperature 1, top_k 1 on the base model.
	probe := f.last("/v1/completions")
	assert.Equal(t, f.base, probe["model"])
	assert.EqualValues(t, 1, probe["top_k"])
	assert.EqualValues(t, 1, probe["temperature"])
	assert.Contains(t, f.auth, "Bearer k")

	srv := startVLLM(t, f)
	_, err := New(context.Background(), Options{BaseURL: srv.URL, Dialect: VLLM, Model: "other"})
	require.ErrorIs(t, err, ErrModelNotServed)
	assert.Contains(t, err.Error(), "Qwen/Qwen3-0.6B")
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{Dialect: VLLM},
		{BaseURL: "ftp://x", Dialect: VLLM},
		{BaseURL: "http://x"},
		{BaseURL: "http://x", Dialect: VLLM, MaxLoadedVersions: -1},
		{BaseURL: "http://x", Dialect: VLLM, RequestTimeout: -1},
		{BaseURL: "http://x", Dialect: VLLM, ProbePrompt: []int{-1}},
	} {
		assert.ErrorIs(t, o.Validate(), ErrOptions, "%+v", o)
	}
	assert.NoError(t, Options{BaseURL: "http://x:8000/", Dialect: SGLang}.Validate())
}

func TestSampleVLLMRequestAndOutput(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, nil)
	p := rl.SamplingParams{MaxTokens: 8, Temperature: 0.7, TopK: 20, TopP: 0.9, Seed: seed(1234),
		StopTokens: []int{2}, StopStrings: []string{"\n\n"}}
	out, err := s.Sample(context.Background(), rl.ModelInput{Chunks: []rl.Chunk{{Tokens: []int{1, 15}}, {Tokens: []int{27, 8}}}}, 2, p)
	require.NoError(t, err)
	got := f.last("/v1/completions")
	want := map[string]any{
		"model": f.base, "prompt": []any{1.0, 15.0, 27.0, 8.0}, "max_tokens": 8.0, "n": 2.0,
		"temperature": 0.7, "top_p": 0.9, "top_k": 20.0, "min_p": 0.0, "repetition_penalty": 1.0,
		"presence_penalty": 0.0, "frequency_penalty": 0.0, "seed": 1234.0, "stop": []any{"\n\n"},
		"stop_token_ids": []any{2.0}, "ignore_eos": true, "min_tokens": 0.0, "include_stop_str_in_output": true,
		"skip_special_tokens": false, "add_special_tokens": false, "logprobs": 0.0, "echo": false,
		"return_token_ids": true, "return_tokens_as_token_ids": true, "stream": false,
	}
	assert.Equal(t, want, got)
	assert.Equal(t, policy.Version(0), out.Version)
	require.Len(t, out.Sequences, 2)
	sum := 1 + 15 + 27 + 8
	for i, sq := range out.Sequences {
		assert.Equal(t, []int{3 + (sum+i)%50, 3 + (sum+i+1)%50, 3 + (sum+i+2)%50}, sq.Tokens)
		assert.Equal(t, []float64{-0.25, -0.5, -0.75}, sq.Logprobs)
		assert.Equal(t, rl.StopStop, sq.StopReason)
	}
	assert.Nil(t, out.PromptLogprobs)

	// Defaults mapped: top_p 0 → 1, top_k 0 → -1, empty stops sent as [].
	_, err = s.Sample(context.Background(), rl.Tokens([]int{5}), 1, rl.SamplingParams{MaxTokens: 2, Temperature: 1})
	require.NoError(t, err)
	got = f.last("/v1/completions")
	assert.EqualValues(t, 1, got["top_p"])
	assert.EqualValues(t, -1, got["top_k"])
	assert.Equal(t, []any{}, got["stop"])
	assert.Equal(t, []any{}, got["stop_token_ids"])
	assert.NotNil(t, got["seed"], "a seed is always sent")
}

func TestSampleClampsToContext(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	f.maxLen = 10
	s, _ := newVLLMSampler(t, f, nil)
	_, err := s.Sample(context.Background(), rl.Tokens(make([]int, 8)), 1, rl.SamplingParams{MaxTokens: 100, Temperature: 1})
	require.NoError(t, err)
	assert.EqualValues(t, 2, f.last("/v1/completions")["max_tokens"])
	before := f.count("/v1/completions")
	out, err := s.Sample(context.Background(), rl.Tokens(make([]int, 10)), 2, rl.SamplingParams{MaxTokens: 5, Temperature: 1})
	require.NoError(t, err)
	assert.Equal(t, before, f.count("/v1/completions"), "no room: no request")
	for _, sq := range out.Sequences {
		assert.Empty(t, sq.Tokens)
		assert.Equal(t, rl.StopLength, sq.StopReason)
	}
}

func TestPromptLogprobs(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, nil)
	prompt := rl.Tokens([]int{4, 9, 11})
	// Neutral sampling: in the same request.
	n0 := f.count("/v1/completions")
	out, err := s.Sample(context.Background(), prompt, 1, rl.SamplingParams{MaxTokens: 2, Temperature: 1, PromptLogprobs: true, TopKPromptLogprobs: 1})
	require.NoError(t, err)
	assert.Equal(t, n0+1, f.count("/v1/completions"))
	assert.EqualValues(t, 1, f.last("/v1/completions")["prompt_logprobs"])
	assert.Equal(t, []float64{0, -1.5, -1.5}, out.PromptLogprobs)
	assert.Equal(t, [][]rl.TokenLogprob{nil, {{Token: 999, Logprob: -0.5}}, {{Token: 999, Logprob: -0.5}}}, out.TopKPromptLogprobs)
	// Not neutral: a second, neutral scoring request.
	out, err = s.Sample(context.Background(), prompt, 1, rl.SamplingParams{MaxTokens: 2, Temperature: 0.5, PromptLogprobs: true})
	require.NoError(t, err)
	assert.Equal(t, n0+3, f.count("/v1/completions"))
	score := f.last("/v1/completions")
	assert.EqualValues(t, 0, score["prompt_logprobs"])
	assert.EqualValues(t, 1, score["temperature"])
	assert.EqualValues(t, -1, score["top_k"])
	assert.EqualValues(t, 1, score["max_tokens"])
	assert.Equal(t, []float64{0, -1.5, -1.5}, out.PromptLogprobs)
	assert.Nil(t, out.TopKPromptLogprobs)
}

func TestLoadNamesAndNoOps(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, func(o *Options) {
		o.PathRewrite = func(p string) (string, error) { return "/shared" + p, nil }
	})
	ctx := context.Background()
	require.NoError(t, s.Load(ctx, ref(17)))
	assert.Equal(t, map[string]string{"run-v000017": "/shared/ckpt/run/v17"}, f.registered())
	body := f.last("/v1/load_lora_adapter")
	assert.Equal(t, map[string]any{"lora_name": "run-v000017", "lora_path": "/shared/ckpt/run/v17", "load_inplace": false}, body)
	require.NoError(t, s.Load(ctx, ref(17)), "the served version again: no-op")
	assert.Equal(t, 1, f.count("/v1/load_lora_adapter"))
	require.ErrorIs(t, s.Load(ctx, ref(3)), ErrVersion)
	require.ErrorContains(t, s.Load(ctx, policy.Ref{Run: "run", Version: 20, URI: "tinker://x/sampler_weights/y"}), "ResolveCheckpoint")

	out, err := s.Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 2, Temperature: 1})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(17), out.Version)
	assert.Equal(t, "run-v000017", f.last("/v1/completions")["model"])
}

// A Sample in flight on version 3 keeps it registered while 4..7 load; it
// is unloaded once that Sample returns.
func TestInFlightSampleKeepsVersion(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, func(o *Options) { o.MaxLoadedVersions = 4 })
	ctx := context.Background()
	for v := 1; v <= 3; v++ {
		require.NoError(t, s.Load(ctx, ref(v)))
	}
	gate := make(chan struct{})
	f.mu.Lock()
	f.block["run-v000003"] = gate
	f.mu.Unlock()
	type result struct {
		out rl.SampleOutput
		err error
	}
	done := make(chan result)
	go func() {
		out, err := s.Sample(ctx, rl.Tokens([]int{1, 2}), 1, rl.SamplingParams{MaxTokens: 2, Temperature: 1})
		done <- result{out, err}
	}()
	require.Equal(t, "run-v000003", <-f.started)
	for v := 4; v <= 7; v++ {
		require.NoError(t, s.Load(ctx, ref(v)))
	}
	reg := f.registered()
	assert.Contains(t, reg, "run-v000003", "in use: kept")
	assert.NotContains(t, reg, "run-v000001")
	assert.NotContains(t, reg, "run-v000002")
	assert.Len(t, reg, 5)
	assert.Equal(t, []policy.Version{3, 4, 5, 6, 7}, s.Stats().Registered)
	close(gate)
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, policy.Version(3), r.out.Version)
	reg = f.registered()
	assert.NotContains(t, reg, "run-v000003", "unloaded after its Sample returned")
	assert.Len(t, reg, 4)
	assert.Equal(t, []policy.Version{4, 5, 6, 7}, s.Stats().Registered)
	assert.Equal(t, []string{"run-v000001", "run-v000002", "run-v000003"}, f.unloads)
	assert.EqualValues(t, 3, s.Stats().Unloads)
}

func TestConcurrentSampleAndLoad(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, func(o *Options) { o.MaxLoadedVersions = 2 })
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := policy.Version(0)
			for range 15 {
				out, err := s.Sample(ctx, rl.Tokens([]int{g + 1}), 2, rl.SamplingParams{MaxTokens: 2, Temperature: 1})
				if err != nil {
					errs <- err
					return
				}
				if out.Version < last {
					errs <- fmt.Errorf("version went back from %d to %d", last, out.Version)
				}
				last = out.Version
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := 1; v <= 20; v++ {
			if err := s.Load(ctx, ref(v)); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, policy.Version(20), s.Version())
	assert.Equal(t, []policy.Version{19, 20}, s.Stats().Registered)
	assert.Len(t, f.registered(), 2)
	assert.NoError(t, s.Stats().UnloadErr)
}

// A cancelled Sample still releases its version: the doomed adapter is
// unloaded when the call returns.
func TestCancelledSampleReleasesVersion(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, func(o *Options) { o.MaxLoadedVersions = 1 })
	ctx := context.Background()
	require.NoError(t, s.Load(ctx, ref(1)))
	gate := make(chan struct{})
	defer close(gate)
	f.mu.Lock()
	f.block["run-v000001"] = gate
	f.mu.Unlock()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := s.Sample(cctx, rl.Tokens([]int{1}), 1, greedy2)
		done <- err
	}()
	<-f.started
	require.NoError(t, s.Load(ctx, ref(2)))
	assert.Contains(t, f.registered(), "run-v000001")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.NotContains(t, f.registered(), "run-v000001")
	assert.Equal(t, []policy.Version{2}, s.Stats().Registered)
}

func TestLoadHangsAndUnloadFails(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	// Attempts are counted as the client sends them: under a short bound a
	// busy machine may end an attempt before the server sees it.
	sent := &countingTransport{base: http.DefaultTransport}
	s, _ := newVLLMSampler(t, f, func(o *Options) {
		o.MaxLoadedVersions, o.MaxRetries = 1, 1
		o.HTTPClient = &http.Client{Transport: sent}
	})
	ctx := context.Background()
	f.mu.Lock()
	f.hangLoads = true
	f.mu.Unlock()
	// A short bound only while loads hang (they never answer, so any bound
	// is right); the loads after run under the default.
	admin := s.t.opts.AdminTimeout
	s.t.opts.AdminTimeout = 20 * time.Millisecond
	err := s.Load(ctx, ref(1))
	s.t.opts.AdminTimeout = admin
	var ce *ConnError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, int64(2), sent.count("/v1/load_lora_adapter"), "AdminTimeout per attempt, MaxRetries 1")
	assert.Equal(t, policy.Version(0), s.Version())

	f.mu.Lock()
	f.hangLoads, f.failUnloads = false, true
	f.mu.Unlock()
	require.NoError(t, s.Load(ctx, ref(1)))
	require.NoError(t, s.Load(ctx, ref(2)), "a failed unload does not fail the load")
	st := s.Stats()
	require.Error(t, st.UnloadErr)
	assert.Contains(t, st.UnloadErr.Error(), "engine busy")
	assert.Equal(t, 1, f.count("/v1/unload_lora_adapter"), "unloads are tried once")
	assert.Equal(t, []policy.Version{2}, st.Registered)
}

// A tinker:// ref is resolved by ResolveCheckpoint to its folder, which
// PathRewrite then maps as any other.
func TestLoadResolvesCheckpointURIs(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, func(o *Options) {
		o.ResolveCheckpoint = func(uri string) (string, error) {
			if uri != "tinker://run/sampler_weights/s5" {
				return "", fmt.Errorf("unknown %s", uri)
			}
			return "/store/run/s5", nil
		}
		o.PathRewrite = func(p string) (string, error) { return "/mnt" + p, nil }
	})
	ctx := context.Background()
	require.NoError(t, s.Load(ctx, policy.Ref{Run: "run", Version: 5, URI: "tinker://run/sampler_weights/s5"}))
	assert.Equal(t, map[string]string{"run-v000005": "/mnt/store/run/s5"}, f.registered())
	require.ErrorContains(t, s.Load(ctx, policy.Ref{Run: "run", Version: 6, URI: "tinker://run/sampler_weights/nope"}), "unknown")
}

// A replica that restarted lost its adapters: Sample fails with
// ErrModelNotServed, and Reload registers the served version again (a
// no-op registration when the server still holds it).
func TestReloadAfterRestart(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, nil)
	ctx := context.Background()
	require.NoError(t, s.Load(ctx, ref(4)))
	require.NoError(t, s.Reload(ctx, ref(4)), "still held: registering again is a no-op")
	f.mu.Lock()
	f.adapters = map[string]string{} // the server restarted
	f.mu.Unlock()
	_, err := s.Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 1, Temperature: 1})
	require.ErrorIs(t, err, ErrModelNotServed)
	require.NoError(t, s.Load(ctx, ref(4)), "Load of the served version is a no-op…")
	_, err = s.Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 1, Temperature: 1})
	require.ErrorIs(t, err, ErrModelNotServed, "…which does not bring it back")
	require.NoError(t, s.Reload(ctx, ref(4)))
	assert.Equal(t, map[string]string{"run-v000004": "/ckpt/run/v4"}, f.registered())
	out, err := s.Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 1, Temperature: 1})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(4), out.Version)
	require.NoError(t, s.Reload(ctx, ref(5)), "a newer ref is a Load")
	assert.Equal(t, policy.Version(5), s.Version())
}

// countingTransport counts the requests a client sends, by path.
type countingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	n    map[string]int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int64{}
	}
	c.n[r.URL.Path]++
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

func (c *countingTransport) count(path string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}
