package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// fakeSGLang stands in for SGLang's native server with --enable-lora.
type fakeSGLang struct {
	mu         sync.Mutex
	adapters   map[string]string
	raw        bool
	maxRank    int
	ranks      map[string]int
	noLoRA     bool
	bodies     map[string][]json.RawMessage
	generating map[string]int // lora_path (or "" for the base) → inputs
}

func newFakeSGLang() *fakeSGLang {
	return &fakeSGLang{adapters: map[string]string{}, maxRank: 16, ranks: map[string]int{},
		bodies: map[string][]json.RawMessage{}, generating: map[string]int{}}
}

func (f *fakeSGLang) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies[r.URL.Path] = append(f.bodies[r.URL.Path], b)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/get_model_info":
		_, _ = io.WriteString(w, `{"model_path":"Qwen/Qwen3-0.6B","tokenizer_path":"Qwen/Qwen3-0.6B","is_generation":true,"preferred_sampling_params":null,"weight_version":"default"}`)
	case "/get_server_info":
		_, _ = io.WriteString(w, `{"context_length":2048,"enable_lora":true,"version":"0.5.0"}`)
	case "/generate":
		f.generate(w, b)
	case "/load_lora_adapter":
		var q map[string]any
		_ = json.Unmarshal(b, &q)
		name, path := q["lora_name"].(string), q["lora_path"].(string)
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case f.noLoRA:
			_, _ = io.WriteString(w, `{"success":false,"error_message":"LoRA is not enabled. Please set --enable-lora.","loaded_adapters":{}}`)
		case f.adapters[name] != "":
			_, _ = fmt.Fprintf(w, `{"success":false,"error_message":"The LoRA adapter %s is already loaded.","loaded_adapters":{}}`, name)
		case f.ranks[path] > f.maxRank:
			_, _ = fmt.Fprintf(w, `{"success":false,"error_message":"LoRA adapter rank %d exceeds max_lora_rank %d.","loaded_adapters":{}}`, f.ranks[path], f.maxRank)
		default:
			f.adapters[name] = path
			_, _ = io.WriteString(w, `{"success":true,"error_message":null,"loaded_adapters":{}}`)
		}
	case "/unload_lora_adapter":
		var q map[string]any
		_ = json.Unmarshal(b, &q)
		f.mu.Lock()
		delete(f.adapters, q["lora_name"].(string))
		f.mu.Unlock()
		_, _ = io.WriteString(w, `{"success":true,"error_message":null,"loaded_adapters":{}}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"detail":"Not Found"}`)
	}
}

func (f *fakeSGLang) generate(w http.ResponseWriter, b []byte) {
	var q struct {
		InputIDs        json.RawMessage `json:"input_ids"`
		SamplingParams  json.RawMessage `json:"sampling_params"`
		LoraPath        json.RawMessage `json:"lora_path"`
		LogprobStartLen int             `json:"logprob_start_len"`
		TopLogprobsNum  int             `json:"top_logprobs_num"`
	}
	_ = json.Unmarshal(b, &q)
	var inputs [][]int
	var params []map[string]any
	var loras []*string
	if json.Unmarshal(q.InputIDs, &inputs) != nil { // single form
		var one []int
		_ = json.Unmarshal(q.InputIDs, &one)
		inputs = [][]int{one}
		var p map[string]any
		_ = json.Unmarshal(q.SamplingParams, &p)
		params = []map[string]any{p}
		var l *string
		_ = json.Unmarshal(q.LoraPath, &l)
		loras = []*string{l}
	} else {
		_ = json.Unmarshal(q.SamplingParams, &params)
		_ = json.Unmarshal(q.LoraPath, &loras)
	}
	var outs []map[string]any
	for i, in := range inputs {
		if loras[i] != nil {
			f.mu.Lock()
			ok := f.adapters[*loras[i]] != ""
			f.generating[*loras[i]]++
			f.mu.Unlock()
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = fmt.Fprintf(w, `{"error":{"message":"LoRA %s not loaded","code":400}}`, *loras[i])
				return
			}
		}
		p := params[i]
		maxNew, topK, seed := num(p["max_new_tokens"]), num(p["top_k"]), num(p["sampling_seed"])
		var lps [][]any
		var ids []int
		for j := range min(maxNew, 3) {
			id := 3 + (seed+j)%40
			lp := -0.25 * float64(j+1)
			if topK == 1 && !f.raw {
				lp = 0
			}
			if f.raw {
				lp = -0.4
			}
			ids = append(ids, id)
			lps = append(lps, []any{lp, id, nil})
		}
		finish := map[string]any{"type": "length", "length": maxNew}
		if maxNew > 3 {
			finish = map[string]any{"type": "stop", "matched": ids[len(ids)-1]}
		}
		meta := map[string]any{"id": "r", "finish_reason": finish, "prompt_tokens": len(in), "completion_tokens": len(ids),
			"cached_tokens": 0, "weight_version": "default", "output_token_logprobs": lps}
		if q.LogprobStartLen == 0 {
			var itl [][]any
			var itop []any
			for j, t := range in {
				if j == 0 {
					itl, itop = append(itl, []any{nil, t, nil}), append(itop, nil)
					continue
				}
				itl = append(itl, []any{-2.0, t, nil})
				row := []any{[]any{-1.0, 7, nil}}
				if q.TopLogprobsNum > 1 {
					row = append(row, []any{-2.0, t, nil})
				}
				itop = append(itop, row)
			}
			meta["input_token_logprobs"], meta["input_top_logprobs"] = itl, itop
		}
		outs = append(outs, map[string]any{"text": "…", "output_ids": ids, "meta_info": meta})
	}
	if json.Unmarshal(q.InputIDs, &inputs) != nil || len(inputs) == 0 {
		_ = json.NewEncoder(w).Encode(outs[0])
		return
	}
	_ = json.NewEncoder(w).Encode(outs)
}

func newSGLangSampler(t *testing.T, f *fakeSGLang, mod func(*Options)) *Sampler {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	o := testOptions(srv.URL, SGLang, &waits{})
	if mod != nil {
		mod(&o)
	}
	s, err := New(context.Background(), o)
	require.NoError(t, err)
	return s
}

func TestSGLangSample(t *testing.T) {
	t.Parallel()
	f := newFakeSGLang()
	s := newSGLangSampler(t, f, nil)
	assert.Equal(t, "Qwen/Qwen3-0.6B", s.BaseModel())
	assert.Equal(t, 2048, s.MaxModelLen())
	ctx := context.Background()

	out, err := s.Sample(ctx, rl.Tokens([]int{1, 15, 27, 8}), 2, rl.SamplingParams{MaxTokens: 16, Temperature: 0.8, TopP: 0.95, Seed: seed(100), StopTokens: []int{2}})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(0), out.Version)
	var got map[string]any
	f.mu.Lock()
	bs := f.bodies["/generate"]
	require.NoError(t, json.Unmarshal(bs[len(bs)-1], &got))
	f.mu.Unlock()
	sp := map[string]any{"max_new_tokens": 16.0, "temperature": 0.8, "top_p": 0.95, "top_k": -1.0, "min_p": 0.0,
		"frequency_penalty": 0.0, "presence_penalty": 0.0, "repetition_penalty": 1.0, "min_new_tokens": 0.0, "n": 1.0,
		"stop": []any{}, "stop_token_ids": []any{2.0}, "ignore_eos": true, "no_stop_trim": true,
		"skip_special_tokens": false, "sampling_seed": 100.0}
	sp1 := map[string]any{}
	for k, v := range sp {
		sp1[k] = v
	}
	sp1["sampling_seed"] = 101.0
	prompt := []any{1.0, 15.0, 27.0, 8.0}
	assert.Equal(t, map[string]any{
		"input_ids": []any{prompt, prompt}, "sampling_params": []any{sp, sp1},
		"return_logprob": true, "logprob_start_len": -1.0, "top_logprobs_num": 0.0,
		"lora_path": []any{nil, nil}, "stream": false,
	}, got)
	require.Len(t, out.Sequences, 2)
	for i, sq := range out.Sequences {
		assert.Equal(t, []int{3 + (100+i)%40, 3 + (101+i)%40, 3 + (102+i)%40}, sq.Tokens)
		assert.Equal(t, []float64{-0.25, -0.5, -0.75}, sq.Logprobs)
		assert.Equal(t, rl.StopStop, sq.StopReason)
	}

	require.NoError(t, s.Load(ctx, ref(5)))
	out, err = s.Sample(ctx, rl.Tokens([]int{4, 9}), 1, rl.SamplingParams{MaxTokens: 2, Temperature: 1, PromptLogprobs: true, TopKPromptLogprobs: 2})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(5), out.Version)
	assert.Equal(t, []float64{0, -2}, out.PromptLogprobs)
	assert.Equal(t, [][]rl.TokenLogprob{nil, {{Token: 7, Logprob: -1}, {Token: 9, Logprob: -2}}}, out.TopKPromptLogprobs)
	f.mu.Lock()
	bs = f.bodies["/generate"]
	var score map[string]any
	require.NoError(t, json.Unmarshal(bs[len(bs)-1], &score))
	f.mu.Unlock()
	assert.Equal(t, "run-v000005", score["lora_path"])
	assert.EqualValues(t, 0, score["logprob_start_len"])
	assert.EqualValues(t, 2, score["top_logprobs_num"])
}

func TestSGLangVersionsAndFaults(t *testing.T) {
	t.Parallel()
	f := newFakeSGLang()
	s := newSGLangSampler(t, f, func(o *Options) { o.MaxLoadedVersions = 2 })
	ctx := context.Background()
	for v := 1; v <= 4; v++ {
		require.NoError(t, s.Load(ctx, ref(v)))
	}
	f.mu.Lock()
	assert.Equal(t, map[string]string{"run-v000003": "/ckpt/run/v3", "run-v000004": "/ckpt/run/v4"}, f.adapters)
	f.ranks["/ckpt/run/v5"] = 64
	f.adapters["run-v000006"] = "/other"
	f.mu.Unlock()

	err := s.Load(ctx, ref(5))
	require.ErrorIs(t, err, ErrAdapterRank)
	assert.Contains(t, err.Error(), "--max-lora-rank")
	require.ErrorIs(t, s.Load(ctx, ref(6)), ErrAdapterExists)
	assert.Equal(t, policy.Version(4), s.Version(), "failed loads leave the served version")

	f.mu.Lock()
	f.noLoRA = true
	f.mu.Unlock()
	err = s.Load(ctx, ref(7))
	require.ErrorIs(t, err, ErrRuntimeLoRADisabled)
	assert.Contains(t, err.Error(), "--enable-lora")
}

func TestSGLangRawLogprobsRefused(t *testing.T) {
	t.Parallel()
	f := newFakeSGLang()
	f.raw = true
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	_, err := New(context.Background(), testOptions(srv.URL, SGLang, &waits{}))
	require.ErrorIs(t, err, ErrRawLogprobs)
	assert.Contains(t, err.Error(), "SkipLogprobsProbe")
}
