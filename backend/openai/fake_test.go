package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// fakeVLLM is an httptest stand-in for vLLM's OpenAI server with runtime
// LoRA updating, answering with the shapes of vLLM's protocol
// definitions (testdata/README.md). Safe for concurrent use.
type fakeVLLM struct {
	mu       sync.Mutex
	base     string
	maxLen   int
	adapters map[string]string // name → lora_path
	// switches
	raw             bool           // log-probs before top-k (--logprobs-mode raw_logprobs)
	runtimeDisabled bool           // no adapter routes
	flatErrors      bool           // the older {"object":"error",…} envelope
	maxRank         int            // --max-lora-rank
	ranks           map[string]int // lora_path → rank
	hang            bool           // completions never answer
	hangLoads       bool           // adapter loads never answer
	failUnloads     bool           // unloads answer 503
	faults          []int          // statuses for the next completions
	abortNext       int            // completions answered with finish_reason abort
	block           map[string]chan struct{}
	started         chan string // a blocked completion started (its model)
	// records
	bodies  map[string][]map[string]any // path → request bodies
	loads   []string
	unloads []string
	auth    []string
}

func newFakeVLLM() *fakeVLLM {
	return &fakeVLLM{
		base: "Qwen/Qwen3-0.6B", maxLen: 4096, adapters: map[string]string{}, maxRank: 16,
		ranks: map[string]int{}, block: map[string]chan struct{}{}, started: make(chan string, 16),
		bodies: map[string][]map[string]any{},
	}
}

func (f *fakeVLLM) errorJSON(w http.ResponseWriter, status int, typ, msg string, param any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if f.flatErrors {
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "error", "message": msg, "type": typ, "param": param, "code": status})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": param, "code": status}})
}

func (f *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	f.mu.Lock()
	f.bodies[r.URL.Path] = append(f.bodies[r.URL.Path], body)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	switch r.URL.Path {
	case "/v1/models":
		f.models(w)
	case "/v1/completions":
		f.completions(w, r, body)
	case "/v1/load_lora_adapter", "/v1/unload_lora_adapter":
		if f.runtimeDisabled {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"detail":"Not Found"}`)
			return
		}
		f.mu.Lock()
		hangLoads, failUnloads := f.hangLoads, f.failUnloads
		f.mu.Unlock()
		if hangLoads && r.URL.Path == "/v1/load_lora_adapter" {
			<-r.Context().Done()
			return
		}
		if failUnloads && r.URL.Path == "/v1/unload_lora_adapter" {
			f.errorJSON(w, 503, "ServiceUnavailable", "engine busy", nil)
			return
		}
		if r.URL.Path == "/v1/load_lora_adapter" {
			f.load(w, body)
		} else {
			f.unload(w, body)
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"detail":"Not Found"}`)
	}
}

func (f *fakeVLLM) models(w http.ResponseWriter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data := []map[string]any{{"id": f.base, "object": "model", "created": 1762300000, "owned_by": "vllm",
		"root": "/models/base", "parent": nil, "max_model_len": f.maxLen}}
	for name, path := range f.adapters {
		data = append(data, map[string]any{"id": name, "object": "model", "created": 1762300000, "owned_by": "vllm",
			"root": path, "parent": f.base, "max_model_len": nil})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

func (f *fakeVLLM) load(w http.ResponseWriter, body map[string]any) {
	name, _ := body["lora_name"].(string)
	path, _ := body["lora_path"].(string)
	f.mu.Lock()
	f.loads = append(f.loads, name)
	_, exists := f.adapters[name]
	rank := f.ranks[path]
	f.mu.Unlock()
	switch {
	case name == "" || path == "":
		f.errorJSON(w, 400, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.", nil)
	case exists:
		f.errorJSON(w, 400, "InvalidUserInput", fmt.Sprintf("The lora adapter '%s' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.", name), nil)
	case path == "/missing":
		f.errorJSON(w, 404, "NotFoundError", fmt.Sprintf("Loading lora %s failed: No adapter found for %s", name, path), nil)
	case rank > f.maxRank:
		f.errorJSON(w, 500, "InternalServerError", fmt.Sprintf("LoRA rank %d is greater than max_lora_rank %d.", rank, f.maxRank), nil)
	default:
		f.mu.Lock()
		f.adapters[name] = path
		f.mu.Unlock()
		_, _ = fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", name)
	}
}

func (f *fakeVLLM) unload(w http.ResponseWriter, body map[string]any) {
	name, _ := body["lora_name"].(string)
	f.mu.Lock()
	_, ok := f.adapters[name]
	delete(f.adapters, name)
	f.unloads = append(f.unloads, name)
	f.mu.Unlock()
	if !ok {
		f.errorJSON(w, 404, "NotFoundError", fmt.Sprintf("The lora adapter '%s' cannot be found.", name), nil)
		return
	}
	_, _ = fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", name)
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

func (f *fakeVLLM) completions(w http.ResponseWriter, r *http.Request, body map[string]any) {
	model, _ := body["model"].(string)
	f.mu.Lock()
	_, known := f.adapters[model]
	known = known || model == f.base
	hang := f.hang
	var fault int
	if len(f.faults) > 0 {
		fault, f.faults = f.faults[0], f.faults[1:]
	}
	abort := f.abortNext > 0
	if abort {
		f.abortNext--
	}
	gate := f.block[model]
	raw := f.raw
	f.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return
	}
	if fault != 0 {
		f.errorJSON(w, fault, "InternalServerError", "injected fault", nil)
		return
	}
	if !known {
		f.errorJSON(w, 404, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", model), "model")
		return
	}
	if gate != nil {
		f.started <- model
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	var prompt []int
	for _, t := range body["prompt"].([]any) {
		prompt = append(prompt, num(t))
	}
	n, maxTokens, topK := num(body["n"]), num(body["max_tokens"]), num(body["top_k"])
	sum := 0
	for _, t := range prompt {
		sum += t
	}
	var choices []map[string]any
	for i := range n {
		k := min(maxTokens, 3)
		var ids []int
		var lps []float64
		var strs []string
		var offs []int
		var tops []map[string]float64
		off := 0
		for j := range k {
			id := 3 + (sum+i+j)%50
			lp := -0.25 * float64(j+1)
			if topK == 1 && !raw {
				lp = 0
			}
			if raw {
				lp = -0.5 - 0.1*float64(j)
			}
			s := "token_id:" + strconv.Itoa(id)
			ids, lps, strs, offs = append(ids, id), append(lps, lp), append(strs, s), append(offs, off)
			tops = append(tops, map[string]float64{s: lp})
			off += len(s)
		}
		finish, stop := "length", any(nil)
		if maxTokens > 3 {
			finish, stop = "stop", ids[len(ids)-1]
		}
		if abort {
			finish = "abort"
		}
		c := map[string]any{"index": i, "text": "…", "finish_reason": finish, "stop_reason": stop,
			"logprobs":  map[string]any{"text_offset": offs, "token_logprobs": lps, "tokens": strs, "top_logprobs": tops},
			"token_ids": ids, "prompt_token_ids": prompt, "prompt_logprobs": nil, "routed_experts": nil}
		if pl, ok := body["prompt_logprobs"]; ok && pl != nil {
			entries := []any{nil}
			for _, t := range prompt[1:] {
				entries = append(entries, map[string]any{
					strconv.Itoa(t): map[string]any{"logprob": -1.5, "rank": 7, "decoded_token": "x"},
					"999":           map[string]any{"logprob": -0.5, "rank": 1, "decoded_token": "y"},
				})
			}
			c["prompt_logprobs"] = entries
		}
		choices = append(choices, c)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "cmpl-1", "object": "text_completion", "created": 1762300000,
		"model": model, "choices": choices, "service_tier": nil, "system_fingerprint": nil,
		"usage": map[string]any{"prompt_tokens": len(prompt), "total_tokens": len(prompt) + 3, "completion_tokens": 3}})
}

// registered returns the adapter names the fake holds.
func (f *fakeVLLM) registered() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]string, len(f.adapters))
	for k, v := range f.adapters {
		out[k] = v
	}
	return out
}

func (f *fakeVLLM) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies[path])
}

func (f *fakeVLLM) last(path string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	bs := f.bodies[path]
	return bs[len(bs)-1]
}

// waits records the pauses of retries; the timer fires at once.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) take() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.d
	w.d = nil
	return d
}

type instantTimer struct {
	w *waits
	c chan time.Time
}

func (t *instantTimer) Start(d time.Duration) {
	t.w.mu.Lock()
	t.w.d = append(t.w.d, d)
	t.w.mu.Unlock()
	t.c <- time.Time{}
}
func (t *instantTimer) Stop()               {}
func (t *instantTimer) C() <-chan time.Time { return t.c }

// testOptions are options toward url whose retries do not wait.
func testOptions(url string, d Dialect, w *waits) Options {
	return Options{
		BaseURL: url, Dialect: d, MaxRetries: 3,
		timer: func() backoff.Timer { return &instantTimer{w: w, c: make(chan time.Time, 1)} },
	}
}

func startVLLM(t *testing.T, f *fakeVLLM) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv
}

func newVLLMSampler(t *testing.T, f *fakeVLLM, mod func(*Options)) (*Sampler, *waits) {
	t.Helper()
	srv := startVLLM(t, f)
	w := &waits{}
	o := testOptions(srv.URL, VLLM, w)
	if mod != nil {
		mod(&o)
	}
	s, err := New(context.Background(), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, w
}
