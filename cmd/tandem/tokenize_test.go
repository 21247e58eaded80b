package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/internal/hforacle"
	"github.com/tandemrl/tandem/tokenizer"
)

func tokenizeLines(t *testing.T, dir string, lines ...string) []map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	in := strings.NewReader(strings.Join(lines, "\n") + "\n")
	require.NoError(t, tokenize(context.Background(), []string{"--tokenizer", dir}, in, &out, &errb), errb.String())
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, len(lines), "one reply per line")
	replies := make([]map[string]any, len(got))
	for i, g := range got {
		require.NoError(t, json.Unmarshal([]byte(g), &replies[i]), g)
	}
	return replies
}

func ids(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

// On the shipped character tokenizer: encode with and without BOS, decode
// with and without special tokens, and a bad line of each kind answered
// with an error while the lines after it are still served.
func TestTokenizeLines(t *testing.T) {
	t.Parallel()
	r := tokenizeLines(t, filepath.Join("..", "..", "basemodel"),
		`{"text": "Hi 1"}`,
		`{"text": "Hi 1", "add_special_tokens": false}`,
		`{"ids": [0, 43, 76, 1]}`,
		`{"ids": [0, 43, 76, 1], "skip_special_tokens": true}`,
		`not json`,
		``,
		`{"ids": [98]}`,
		`{"ids": [1.5]}`,
		`{"text": "x", "ids": [1]}`,
		`{"text": "x", "skip_special_tokens": true}`,
		`{"txt": "x"}`,
		`{"messages": [{"role": "user", "content": "hi"}]}`,
		`{"text": "x"} {"text": "y"}`,
		`{}`,
		`{"text": "ok"}`,
	)
	assert.Equal(t, []int{0, 43, 76, 3, 20}, ids(r[0]["ids"]))
	assert.Equal(t, []int{43, 76, 3, 20}, ids(r[1]["ids"]))
	assert.Equal(t, "<bos>Hi<eos>", r[2]["text"])
	assert.Equal(t, "Hi", r[3]["text"])
	for i, want := range map[int]string{
		4: "bad line", 5: "empty line", 6: "id 98", 7: "bad line", 8: `"text" and "ids" together`,
		9: `"skip_special_tokens" goes with "ids"`, 10: `unknown field "txt"`, 11: "no chat template",
		12: "bad line", 13: "bad line",
	} {
		assert.Contains(t, r[i]["error"], want, "line %d", i+1)
		assert.Len(t, r[i], 1, "line %d: only an error", i+1)
	}
	assert.Equal(t, []int{0, 82, 78}, ids(r[14]["ids"]), "add_special_tokens defaults to true, as in Hugging Face")
}

func TestTokenizeNeedsAFolder(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	err := tokenize(context.Background(), nil, strings.NewReader(""), &out, &errb)
	assert.ErrorAs(t, err, new(usageError))
	err = tokenize(context.Background(), []string{"--tokenizer", t.TempDir()}, strings.NewReader(""), &out, &errb)
	assert.ErrorContains(t, err, "tokenizer.json")
}

// On the four real models (installed by .ci/hf-oracle): the command gives
// what the library gives (which the tokenizer's and chat's differential
// suites check against Hugging Face), and the note's golden ids.
func TestTokenizeRealModels(t *testing.T) {
	t.Parallel()
	golden := map[string]struct {
		text string
		ids  []int
	}{
		"qwen3":    {"<|im_start|>user\nhi<|im_end|>", []int{151644, 872, 198, 6023, 151645}},
		"llama3_1": {"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", []int{128000, 128006, 882, 128007, 271, 13347, 128009}},
	}
	for _, model := range []string{"qwen3", "llama3_1", "deepseek_v3", "gemma3"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			dir := hforacle.Model(t, model)
			tok, err := tokenizer.Load(dir)
			require.NoError(t, err)
			texts := []string{"Hello, world!", "  a  b\n\n", "你好，世界！ 👍🏽", "x<|im_end|>y"}
			conv := `[{"role":"system","content":"Be brief."},{"role":"user","content":"What is 2+2?"}]`
			var lines []string
			for _, s := range texts {
				q, _ := json.Marshal(s)
				lines = append(lines, `{"text":`+string(q)+`,"add_special_tokens":false}`, `{"text":`+string(q)+`}`)
			}
			lines = append(lines, `{"messages":`+conv+`,"add_generation_prompt":true}`)
			r := tokenizeLines(t, dir, lines...)
			for i, s := range texts {
				assert.Equal(t, tok.Encode(s, tokenizer.EncodeOptions{}), ids(r[2*i]["ids"]), "%q", s)
				withSpecial := tok.Encode(s, tokenizer.EncodeOptions{AddSpecialTokens: true})
				assert.Equal(t, withSpecial, ids(r[2*i+1]["ids"]), "%q with special tokens", s)
				back := tokenizeLines(t, dir, `{"ids":`+jsonOf(t, withSpecial)+`,"skip_special_tokens":true}`)
				text, err := tok.Decode(withSpecial, true)
				require.NoError(t, err)
				assert.Equal(t, text, back[0]["text"])
			}
			want, err := chat.ApplyTemplateIDs(tok, tok.Config(), json.RawMessage(conv), chat.TemplateOptions{AddGenerationPrompt: true})
			require.NoError(t, err)
			assert.Equal(t, want, ids(r[len(texts)*2]["ids"]))
			if g, ok := golden[model]; ok {
				q, _ := json.Marshal(g.text)
				assert.Equal(t, g.ids, ids(tokenizeLines(t, dir, `{"text":`+string(q)+`,"add_special_tokens":false}`)[0]["ids"]))
			}
		})
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
