package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/tokenizer/internal/splitfast"
)

// testdata/pretokenize.json holds pre-tokenizer cases with the pieces
// Hugging Face's own pre_tokenize_str gives (tokenizers 0.23.2 through its
// npm binding): every split behaviour with and without invert, Digits,
// Punctuation, Whitespace, WhitespaceSplit, BertPreTokenizer, Metaspace,
// ByteLevel, CharDelimiterSplit, and regular expressions (anchors, empty
// matches, Unicode 16 letters, the Qwen and DeepSeek patterns).
type preCase struct {
	Name string          `json:"name"`
	Text string          `json:"text"`
	Pre  json.RawMessage `json:"pre"`
	Want []string        `json:"want"`
}

func TestPreTokenizersMatchHuggingFace(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/pretokenize.json")
	require.NoError(t, err)
	var cases []preCase
	require.NoError(t, json.Unmarshal(data, &cases))
	require.NotEmpty(t, cases)
	for _, noFast := range []bool{false, true} {
		for _, c := range cases {
			var v jv
			r := &jreader{file: "test", data: c.Pre}
			v, err := r.document(nil)
			require.NoError(t, err)
			pre, byteInput, err := loader{file: "test", noFast: noFast}.preTokenizer(&v, "pre_tokenizer")
			require.NoError(t, err, c.Name)
			var sc scratch
			got := []piece{{s: c.Text, first: true}}
			if pre != nil {
				got = pre.split(nil, got[0], &sc)
			}
			var strs []string
			for _, p := range got {
				if byteInput { // the model would map the bytes: do it here
					p.s = string(appendByteLevel(nil, p.s))
				}
				strs = append(strs, p.s)
			}
			if c.Want == nil {
				c.Want = []string{}
			}
			if strs == nil {
				strs = []string{}
			}
			assert.Equal(t, c.Want, strs, "%s on %q (regexp2 only: %v)", c.Name, c.Text, noFast)
		}
	}
}

func TestMetaspaceFirstOnlyAtOffsetZero(t *testing.T) {
	t.Parallel()
	p := &metaspacePre{repl: "▁", scheme: prependFirst, doSplit: true}
	var sc scratch
	assert.Equal(t, []piece{{"▁a", true}, {"▁b", false}}, p.split(nil, piece{"a b", true}, &sc))
	// A piece after an added token does not start the text: no prefix.
	assert.Equal(t, []piece{{"a", false}, {"▁b", false}}, p.split(nil, piece{"a b", false}, &sc))
}

// The regexp2 path and the hand-written splitters are two
// implementations of the same patterns: they must cut alike.
func TestRegexp2AgreesWithSplitfast(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("aZé 1٣\t\n\r'sStTdDlLmM\u00a0\u3000\u2009\u0085\u000b\u2028x中😀\u0301.,!?-_$^'\u2019ſ\U0002EBF0\u1C89\U00010D40")
	for _, pat := range []string{qwenPattern, llamaPattern, gpt2Pattern} {
		fast := splitfast.For(pat)
		if fast == nil {
			t.Logf("splitfast has no matcher for %.20q", pat)
			continue
		}
		slow, err := compileRegexp2(pat)
		require.NoError(t, err)
		var sc scratch
		for range 3000 {
			var b strings.Builder
			for n := rng.IntN(30); n > 0; n-- {
				b.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
			s := b.String()
			require.Equal(t, fast(nil, s), slow.find(nil, s, &sc), "%.20q on %q", pat, s)
		}
	}
}

func TestOnigPattern(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`abc`, `abc`},
		{`\p{Lt}+`, `\p{Lt}+`}, // no Unicode 16 additions
		{`\p{L}`, `[\p{L}` + onigExtra["L"] + `]`},
		{`\P{N}`, `[^\p{N}` + onigExtra["N"] + `]`},
		{`[^\r\n\p{L}\p{N}]?`, `[^\r\n\p{L}` + onigExtra["L"] + `\p{N}` + onigExtra["N"] + `]?`},
		{`[\P{L}x]`, `[\P{L}x]`},
		{`\d+`, `[\d` + onigExtra["d"] + `]+`},
		{`\pL`, `[\pL` + onigExtra["L"] + `]`},
		{`\Q\p{L}\E`, `\Q\p{L}\E`},
		{`\\p{L}`, `\\p{L}`},
		{`(?m)a.b(?im:c)(?i:d)(?:e)(?=f)`, `(?s)a.b(?is:c)(?i:d)(?:e)(?=f)`},
		{`[]\p{L}]`, `[]\p{L}` + onigExtra["L"] + `]`},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, onigPattern(c.in), c.in)
	}
}
