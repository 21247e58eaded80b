package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/tandemrl/tandem/backend/openai"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// miniVLLM answers the four routes the sampler uses, as a vLLM server
// started with --enable-lora --logprobs-mode processed_logprobs would.
func miniVLLM() http.Handler {
	var mu sync.Mutex
	adapters := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &q)
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"base","object":"model","parent":null,"max_model_len":512}]}`)
		case "/v1/load_lora_adapter":
			adapters[q["lora_name"].(string)] = true
			_, _ = fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", q["lora_name"])
		case "/v1/unload_lora_adapter":
			delete(adapters, q["lora_name"].(string))
			_, _ = fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", q["lora_name"])
		case "/v1/completions":
			lp := -0.5
			if q["top_k"].(float64) == 1 {
				lp = 0 // processed: the only token left
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"model": q["model"], "choices": []any{map[string]any{
				"index": 0, "text": "", "finish_reason": "length", "token_ids": []int{7},
				"logprobs": map[string]any{"token_logprobs": []float64{lp}, "tokens": []string{"token_id:7"}},
			}}})
		}
	})
}

func Example() {
	srv := httptest.NewServer(miniVLLM())
	defer srv.Close()
	ctx := context.Background()

	s, err := openai.New(ctx, openai.Options{BaseURL: srv.URL, Dialect: openai.VLLM, Model: "base"})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := rl.SamplingParams{MaxTokens: 1, Temperature: 1}
	out, _ := s.Sample(ctx, rl.Tokens([]int{1, 2, 3}), 1, p)
	fmt.Println("version", out.Version, "tokens", out.Sequences[0].Tokens, "logprobs", out.Sequences[0].Logprobs)

	err = s.Load(ctx, policy.Ref{Run: "arith", Version: 17, URI: "file:///shared/ckpt/arith/v17"})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ = s.Sample(ctx, rl.Tokens([]int{1, 2, 3}), 1, p)
	fmt.Println("version", out.Version, "registered", s.Stats().Registered)
	// Output:
	// version 0 tokens [7] logprobs [-0.5]
	// version 17 registered [17]
}
