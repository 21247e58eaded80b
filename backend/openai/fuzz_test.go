package openai

import (
	"os"
	"path/filepath"
	"testing"
)

// The decoders read outside input: they must never panic, and what they
// accept must hold together (n sequences, tokens and log-probs aligned,
// at most max_tokens, prompt log-probs one per prompt token).

func seedFixtures(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
}

func checkResult(t *testing.T, res genResult, n, maxTokens, promptLen int) {
	if len(res.seqs) != n {
		t.Fatalf("%d sequences for n = %d", len(res.seqs), n)
	}
	for i, s := range res.seqs {
		if len(s.Tokens) != len(s.Logprobs) || len(s.Tokens) > maxTokens {
			t.Fatalf("sequence %d: %d tokens, %d log-probs, max %d", i, len(s.Tokens), len(s.Logprobs), maxTokens)
		}
		if s.StopReason != "stop" && s.StopReason != "length" {
			t.Fatalf("sequence %d: stop reason %q", i, s.StopReason)
		}
	}
	if res.prompt != nil && len(res.prompt) != promptLen {
		t.Fatalf("%d prompt log-probs for %d tokens", len(res.prompt), promptLen)
	}
}

func FuzzDecodeCompletion(f *testing.F) {
	seedFixtures(f, "vllm_completion_response.json", "vllm_completion_response_no_token_ids.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, r := range []genRequest{
			{n: 2, maxTokens: 16, prompt: []int{1, 15, 27, 8}, promptLogprobs: true, topK: 1},
			{n: 1, maxTokens: 2, prompt: []int{1}},
		} {
			res, err := decodeCompletion(b, r)
			if err == nil {
				checkResult(t, res, r.n, r.maxTokens, len(r.prompt))
			}
		}
	})
}

func FuzzDecodeGenerate(f *testing.F) {
	seedFixtures(f, "sglang_generate_response.json", "sglang_score_response.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := decodeGenerate(b, genRequest{n: 2, maxTokens: 16})
		if err == nil {
			checkResult(t, res, 2, 16, 0)
		}
		sc, err := decodeScore(b, []int{1, 15, 27}, 2)
		if err == nil {
			if len(sc.prompt) != 3 || (sc.promptTopK != nil && len(sc.promptTopK) != 3) {
				t.Fatalf("score: %d prompt log-probs, %d top rows", len(sc.prompt), len(sc.promptTopK))
			}
			for _, row := range sc.promptTopK {
				if len(row) > 2 {
					t.Fatalf("top row of %d > k", len(row))
				}
			}
		}
	})
}

func FuzzStatusError(f *testing.F) {
	seedFixtures(f, "vllm_errors.json", "sglang_load_failure.json")
	f.Add([]byte(`{"error":"plain"}`))
	f.Add([]byte(`{"detail":[{"loc":["body"],"msg":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		se := newStatusError("POST", "/v1/load_lora_adapter", 404, b)
		_ = se.Error()
		_ = classifyLoad(VLLM, "n", "/p", se)
		_ = classifyLoad(SGLang, "n", "/p", se)
	})
}
