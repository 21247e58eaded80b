package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/internal/hforacle"
)

// Golden ids from Hugging Face's tokenizers 0.23.2 on the real files that
// .ci/hf-oracle installs (../shared/notes/tokenizers.md §4, §5, §10, and
// the oracle). The tests skip when the files are absent.

var (
	realOnce  = map[string]*sync.Once{"qwen3": {}, "llama3_1": {}, "deepseek_v3": {}, "gemma3": {}}
	realToks  = map[string]*Tokenizer{}
	realFails = map[string]string{}
	realMu    sync.Mutex
)

// shared loads a real tokenizer once for all the tests that use it; it
// skips the test (fails it under CI=true) when the model is not installed.
func shared(t *testing.T, name string) *Tokenizer {
	t.Helper()
	hforacle.Model(t, name)
	realOnce[name].Do(func() {
		tok, fail := loadReal(name)
		realMu.Lock()
		realToks[name], realFails[name] = tok, fail
		realMu.Unlock()
	})
	realMu.Lock()
	tok, fail := realToks[name], realFails[name]
	realMu.Unlock()
	if tok == nil {
		t.Fatal(fail)
	}
	return tok
}

// loadReal loads an installed real tokenizer, or says why it cannot.
func loadReal(name string) (*Tokenizer, string) {
	tok, err := Load(hforacle.ModelDir(name))
	if err != nil {
		return nil, "no " + name + " tokenizer (" + err.Error() + "): " + hforacle.Install
	}
	return tok, ""
}

type realCase struct {
	text string
	add  bool
	want []int
}

func checkReal(t *testing.T, name string, cases []realCase) {
	t.Helper()
	tok := shared(t, name)
	checkCases(t, tok, name, cases)
	// The same through regexp2 alone, for the patterns splitfast knows.
	data, err := os.ReadFile(filepath.Join(hforacle.ModelDir(name), "tokenizer.json"))
	require.NoError(t, err)
	slow, err := parseTokenizer(data, true)
	require.NoError(t, err)
	checkCases(t, slow, name+" (regexp2)", cases)
}

func checkCases(t *testing.T, tok *Tokenizer, name string, cases []realCase) {
	t.Helper()
	for _, c := range cases {
		got := tok.Encode(c.text, EncodeOptions{AddSpecialTokens: c.add})
		assert.Equal(t, c.want, got, "%s: %q", name, c.text)
		dec, err := tok.Decode(got, false)
		require.NoError(t, err)
		want := c.text
		if n, ok := tok.normalizer.(unicodeNorm); ok { // decoding gives the NFC text
			want = n.normalize(want, &scratch{})
		}
		if c.add && len(got) > 0 && tok.IsSpecial(got[0]) {
			bos, _ := tok.Token(got[0])
			want = bos + want
		}
		assert.Equal(t, want, dec, "%s: decode of %q", name, c.text)
	}
}

func TestRealQwen3(t *testing.T) {
	t.Parallel()
	cases := []realCase{
		{"a  b   c    d", false, []int{64, 220, 293, 256, 272, 262, 294}},
		{"\n\n\n", false, []int{1406}},
		{"  \n  x", false, []int{2303, 220, 856}},
		{"  two leading", false, []int{220, 1378, 6388}},
		{"a\u00a0b a\u3000b a\u2009b a\u0085b a\u000bb a\u200bb", false,
			[]int{64, 4102, 65, 264, 22441, 65, 264, 378, 231, 65, 264, 126, 227, 65, 264, 199, 65, 264, 15692, 65}},
		{"can't won't shouldn't", false, []int{4814, 944, 2765, 944, 13133, 944}},
		{"e\u0301 cafe\u0301 \u212b A\u030a", false, []int{963, 51950, 79252, 79252}},
		{"你好，世界！", false, []int{108386, 3837, 99489, 6313}},
		{" 👨‍👩‍👧", false, []int{61804, 101, 378, 235, 145233, 378, 235, 145665}},
		{"<|im_start|>user\nhi<|im_end|>", false, []int{151644, 872, 198, 6023, 151645}},
		{"<<|im_start|>>", false, []int{27, 151644, 29}},
		{"Hi", true, []int{13048}}, // the file's post-processor adds nothing
	}
	checkReal(t, "qwen3", cases)
	tok := shared(t, "qwen3")
	// Digits one by one.
	var digits []int
	for _, c := range "1234567890123" {
		id, ok := tok.TokenID(string(c))
		require.True(t, ok)
		digits = append(digits, id)
	}
	assert.Equal(t, digits, tok.Encode("1234567890123", EncodeOptions{}))
	// skip_special_tokens keeps the non-special <think>.
	dec, err := tok.Decode([]int{151644, 151667, 198, 151668, 151645}, true)
	require.NoError(t, err)
	assert.Equal(t, "<think>\n</think>", dec)
	// With special-token splitting, user text cannot forge a turn.
	ids := tok.Encode("<|im_end|><think>", EncodeOptions{SplitSpecialTokens: true})
	assert.NotContains(t, ids, 151645)
	assert.Equal(t, 151667, ids[len(ids)-1])
	assert.Equal(t, 151669, tok.VocabSize())
}

func TestRealLlama31(t *testing.T) {
	t.Parallel()
	checkReal(t, "llama3_1", []realCase{
		{"a  b   c    d", false, []int{64, 220, 293, 256, 272, 262, 294}},
		{"\n\n\n", false, []int{1432}},
		{" Việt", false, []int{101798}}, // ignore_merges
		{"1234567890123", false, []int{4513, 10961, 16474, 11531, 18}},
		{"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", false,
			[]int{128000, 128006, 882, 128007, 271, 13347, 128009}},
		{"Hi", true, []int{128000, 13347}}, // BOS from the TemplateProcessing
	})
	assert.Equal(t, 128256, shared(t, "llama3_1").VocabSize())
}

func TestRealDeepSeekV3(t *testing.T) {
	t.Parallel()
	checkReal(t, "deepseek_v3", []realCase{
		{"<｜User｜>hi<｜Assistant｜>", false, []int{128803, 6366, 128804}}, // normalized:true tokens
		{"𮯰.", false, []int{175, 109, 110, 111, 16}},                    // CJK Ext. I (Unicode 15.1)
		{"中文にほんご", false, []int{21134, 2298, 27697, 7245, 24318}},
		{"Hi", true, []int{23166}}, // the raw file adds no BOS
	})
	assert.Equal(t, 128815, shared(t, "deepseek_v3").VocabSize())
}

func TestRealGemma3(t *testing.T) {
	t.Parallel()
	checkReal(t, "gemma3", []realCase{
		{"\U0010FFFD", false, []int{482, 381, 429, 427}}, // byte_fallback
		{"  two  spaces", false, []int{138, 13498, 138, 35220}},
		{"Hi", true, []int{2, 10979}},
	})
	tok := shared(t, "gemma3")
	assert.Equal(t, 262145, tok.VocabSize())
	// A long single word (Gemma's pieces are whole) round-trips.
	long := strings.Repeat("Tokenization of one long paragraph without added tokens. ", 80)
	dec, err := tok.Decode(tok.Encode(long, EncodeOptions{}), false)
	require.NoError(t, err)
	assert.Equal(t, long, dec)
}
