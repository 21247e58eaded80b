package splitfast

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// targeted holds the pre-tokenizer cases of the tokenizers note (§10) and
// neighbours of them.
var targeted = []string{
	// Whitespace.
	"", " ", "  ", "\n", "\n\n\n", " \n", "  \n  x", "\t\t", "CRLF\r\nline\r\n", "a\r\n\r\n b",
	"\r", "\r\r\n\n", "x\r\n", "x \r\n y", "x\n \n y", "x\n\t\ny", " \r\n\t x", "\n\r", "a\n\nb",
	"!\n\n  x", "!\r\n", "! \r\n", "a \n", "a\t\n b", "\u00a0\n\u00a0x", "\u3000\r\n\u3000!",
	// Leading and trailing spaces.
	" leading space", "  two leading", "   three", "trailing   ", "a  b   c    d", "tab\tsep",
	"tabs\t\tand", " \t y", "\t!", " !", "  !", " 1", "  1", "\t1", " \u0301", "x  ", "x \t",
	// Unicode whitespace, and characters that are not whitespace.
	"a\u00a0b a\u3000b a\u2009b a\u0085b a\u000bb a\u200bb",
	"a\ufeffb", "a\u180eb", "a\u001cb\u001f", "\u2028\u2029x", "a\u202f\u205fb", "\u1680a",
	// Contractions.
	"don't", "I'm", "can't won't shouldn't", "you'RE they'LL", "x'ſab", "x'\u212aab", "x'S",
	"don\u2019t", " 's", "'s", "'", "''s", "'re'", "'x", " 'x", "'LL'Ll'lL'VE've'D'M'T",
	"we'd've", "'ſſ", "'ﬆ", "'\u0130", "y'all", "'rE", "'vex", "' ", "'\n",
	// Numbers.
	"1234567890123", "3.14159 x=42", "1,000,000", "٣٤٥ ۱۲۳ १२३", "①②③ ½ ²", "Ⅻ", "12a34", "a12",
	" 12345", "1 2  3", "𝟎𝟏𝟐𝟑", "x²³⁴⁵", "1\u0301 2",
	// Marks and normalization.
	"x\u0301\u0302y", " \u0301", "हिन्दी", "e\u0301 cafe\u0301 \u212b A\u030a", "ﬁne ﬂow", "ǅ ǈ",
	"İı", "ß", "\u0301a", "\u0301\u0301", "a\u0301\u0301", "\u0301 a",
	// Scripts.
	"你好，世界！", "こんにちは世界", "한국어", "mixed русский English 中文 العربية", "ελληνικά",
	"\u05e9\u05dc\u05d5\u05dd", "ไทย", "𝐀𝐁𝐂 𝐱",
	// Emoji.
	"😀", "👍🏽", " 👨\u200d👩\u200d👧", "🇯🇵", "1️⃣", "😀a 😀 b", "a😀", "a 😀😀 b", "#️⃣x",
	// Code.
	"def f(x):\n    return x**2\n\n\n\nprint(f(3))", "func main() {\n\treturn 0\n}\n",
	"    if x:\n        y = 1\n", "\t\t// comment\n\t\tx := y\n", "a\tb\t\tc\n",
	"<|im_start|>user\nhi<|im_end|>", "foo.bar_baz(qux)", "path/to/file.go:12:3",
	// Controls and odd characters.
	"\x00", "a\x00b", "\x7f", "~~~", "\u00ad", "\ufffd", "x\ufffdy", "\U0010fffd", "\U000e0001",
}

func TestForKnowsExactlyThePatterns(t *testing.T) {
	t.Parallel()
	for _, k := range knownPatterns {
		assert.NotNil(t, k.match, k.name)
	}
	near := []string{
		"",
		PatternQwen2 + " ",
		" " + PatternGPT2,
		strings.Replace(PatternCL100K, `{1,3}`, `{1,2}`, 1),
		strings.Replace(PatternQwen2, `(?i:`, `(?:`, 1),
		strings.ReplaceAll(PatternQwen2, `\`, `\\`),
		`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)`,
		`\p{N}{1,3}`,
	}
	for _, p := range near {
		assert.Nil(t, For(p), "%q", p)
	}
}

// hfModels is where the project keeps the Hugging Face oracle files; tests
// that read them skip when they are absent.
func hfModels(t *testing.T) string {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	return filepath.Join(home, ".cache", "tandem", "hf", "models")
}

// splitPatterns returns the Regex patterns of the Split pre-tokenizers of a
// tokenizer.json file.
func splitPatterns(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s not present", path)
	}
	require.NoError(t, err)
	type pre struct {
		Type    string `json:"type"`
		Pattern struct {
			Regex string `json:"Regex"`
		} `json:"pattern"`
		Pretokenizers []pre `json:"pretokenizers"`
	}
	// Decode only the pre_tokenizer object: the vocabulary is megabytes.
	const key = `"pre_tokenizer":`
	at := bytes.Index(data, []byte(key))
	require.GreaterOrEqual(t, at, 0, "no pre_tokenizer in %s", path)
	var top pre
	require.NoError(t, json.NewDecoder(bytes.NewReader(data[at+len(key):])).Decode(&top))
	var out []string
	var walk func(p pre)
	walk = func(p pre) {
		if p.Type == "Split" && p.Pattern.Regex != "" {
			out = append(out, p.Pattern.Regex)
		}
		for _, q := range p.Pretokenizers {
			walk(q)
		}
	}
	walk(top)
	return out
}

func TestPatternsOfTokenizerFiles(t *testing.T) {
	t.Parallel()
	dir := hfModels(t)
	for _, tc := range []struct {
		model string
		want  []string
	}{
		{"qwen3", []string{PatternQwen2}},
		{"llama3_1", []string{PatternCL100K}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			got := splitPatterns(t, filepath.Join(dir, tc.model, "tokenizer.json"))
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("deepseek_v3", func(t *testing.T) {
		got := splitPatterns(t, filepath.Join(dir, "deepseek_v3", "tokenizer.json"))
		require.NotEmpty(t, got)
		for _, p := range got {
			assert.Nil(t, For(p), "DeepSeek-V3's %q is left to regexp2", p)
		}
	})
}

func TestTargeted(t *testing.T) {
	t.Parallel()
	for _, k := range knownPatterns {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, s := range targeted {
				compare(t, k, s)
				// The two ways of iterating regexp2 agree.
				assert.Equal(t, refRanges(t, k.exact, s), refRangesIter(t, k.exact, s), "%q", s)
			}
		})
	}
}

// TestExpectedSplits pins splits that Hugging Face tokenizers 0.23.2
// reported for these strings (preTokenizeString of the Qwen3 and Llama 3.1
// files' pre-tokenizers, and of ByteLevel with use_regex for GPT-2).
func TestExpectedSplits(t *testing.T) {
	t.Parallel()
	digits := strings.Split("1234567890123", "")
	tests := []struct {
		name, s string
		want    map[string][]string // by known pattern name; "" for all
	}{
		{"runs of spaces", "a  b   c    d", map[string][]string{
			"": {"a", " ", " b", "  ", " c", "   ", " d"}}},
		{"spaces around a line break", "  \n  x", map[string][]string{
			"qwen2": {"  \n", " ", " x"}, "cl100k": {"  \n", " ", " x"},
			"gpt2": {"  \n ", " x"}}},
		{"long s folds", "x'ſab", map[string][]string{
			"qwen2": {"x", "'ſ", "ab"}, "cl100k": {"x", "'ſ", "ab"},
			"gpt2": {"x", "'", "ſab"}}},
		{"upper case contractions", "you'RE", map[string][]string{
			"qwen2": {"you", "'RE"}, "cl100k": {"you", "'RE"}, "gpt2": {"you", "'", "RE"}}},
		{"digits", "1234567890123", map[string][]string{
			"qwen2":  digits,
			"cl100k": {"123", "456", "789", "012", "3"},
			"gpt2":   {"1234567890123"}}},
		{"emoji before a letter", "😀a 😀 b", map[string][]string{
			"qwen2": {"😀a", " 😀", " b"}, "cl100k": {"😀a", " 😀", " b"},
			"gpt2": {"😀", "a", " 😀", " b"}}},
		{"extension I is a letter", "𮯰.", map[string][]string{"": {"𮯰", "."}}},
		{"extension I joins a letter run", "x𮯰!?", map[string][]string{"": {"x𮯰", "!?"}}},
		{"line breaks", "CRLF\r\nline\r\n", map[string][]string{
			"qwen2": {"CRLF", "\r\n", "line", "\r\n"}, "cl100k": {"CRLF", "\r\n", "line", "\r\n"},
			"gpt2": {"CRLF", "\r", "\n", "line", "\r\n"}}},
		{"Unicode 16.0 letter", "a\U00013460b", map[string][]string{"": {"a\U00013460b"}}},
		{"Unicode 16.0 digits", "\U00010D40\U00010D41\U00010D42\U00010D43", map[string][]string{
			"qwen2":  {"\U00010D40", "\U00010D41", "\U00010D42", "\U00010D43"},
			"cl100k": {"\U00010D40\U00010D41\U00010D42", "\U00010D43"},
			"gpt2":   {"\U00010D40\U00010D41\U00010D42\U00010D43"}}},
		{"Unicode 16.0 letter and digits", "x\u1c89 \U0001CCF0\U0001CCF1", map[string][]string{
			"qwen2":  {"x\u1c89", " ", "\U0001CCF0", "\U0001CCF1"},
			"cl100k": {"x\u1c89", " ", "\U0001CCF0\U0001CCF1"},
			"gpt2":   {"x\u1c89", " \U0001CCF0\U0001CCF1"}}},
		{"Unicode 17.0 ideograph is no letter", "\U000323B0x", map[string][]string{
			"qwen2": {"\U000323B0x"}, "cl100k": {"\U000323B0x"}, "gpt2": {"\U000323B0", "x"}}},
		{"punctuation takes line breaks", "a!\n\nb", map[string][]string{
			"qwen2": {"a", "!\n\n", "b"}, "cl100k": {"a", "!\n\n", "b"},
			"gpt2": {"a", "!", "\n", "\n", "b"}}},
	}
	for _, tc := range tests {
		for _, k := range knownPatterns {
			want, ok := tc.want[k.name]
			if !ok {
				want, ok = tc.want[""]
			}
			if !ok {
				continue
			}
			got := pieces(tc.s, k.match(nil, tc.s))
			assert.Equal(t, want, got, "%s, %s: %q", tc.name, k.name, tc.s)
		}
	}
}

// whitespaceCodePoints lists every White_Space character, from the table.
func whitespaceCodePoints() []rune {
	var out []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.IsSpace(r) {
			out = append(out, r)
		}
	}
	return out
}

func TestWhitespaceInContexts(t *testing.T) {
	t.Parallel()
	spaces := whitespaceCodePoints()
	require.Len(t, spaces, 25) // U+0009–000D, U+0020, U+0085, U+00A0, U+1680, U+2000–200A, U+2028/9, U+202F, U+205F, U+3000
	notSpaces := []rune{0x200B, 0xFEFF, 0x180E, 0x1C, 0x1D, 0x1E, 0x1F}
	contexts := []string{
		"a%sb", "a%s%sb", "%s", "%s%s", "a%s", "%sa", "%s!", "%s%s!", " %s!", "%s 1", "%s\n",
		"\n%s", "%s\r\n%s", "x%s\ny", "%s'sx", "!%s%s", "1%s%s2", "%s\u0301", "%s😀", "%s%s%s",
	}
	for _, k := range knownPatterns {
		for _, r := range append(spaces, notSpaces...) {
			for _, c := range contexts {
				compare(t, k, strings.ReplaceAll(c, "%s", string(r)))
			}
			for _, r2 := range spaces {
				compare(t, k, "a"+string(r)+string(r2)+"b")
				compare(t, k, string(r)+string(r2)+"!")
			}
		}
	}
}

func TestContractionsInAllCases(t *testing.T) {
	t.Parallel()
	var words []string
	for _, c := range []string{"s", "t", "re", "ve", "m", "ll", "d"} {
		// Every spelling of c under simple case folding.
		forms := []string{""}
		for _, r := range c {
			var next []string
			for f := r; ; {
				for _, p := range forms {
					next = append(next, p+string(f))
				}
				if f = unicode.SimpleFold(f); f == r {
					break
				}
			}
			forms = next
		}
		words = append(words, forms...)
	}
	words = append(words, "k", "K", "\u212a", "x", "e", "l", "r", "v", "")
	for _, k := range knownPatterns {
		for _, w := range words {
			for _, c := range []string{"'%s", "x'%s", "x'%sy", " '%s", "'%s'", "''%s", "'%s!", "'%s1", "'%s 'x"} {
				compare(t, k, strings.ReplaceAll(c, "%s", w))
			}
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	cases := []string{
		"\xff", "a\xffb", " \xff", "\xff\xfe", "'\xff", "\xc3", "\xc3(", "\xe2\x82", "\xe2\x82a",
		"\xed\xa0\x80", "\xf0\x9f\x98", "\xf0\x9f\x98 x", "\xc0\x80", "\xf4\x90\x80\x80", "\x80a",
		"a \x80", " \xe2\x80\xa8", "\n\xff\n", "1\xff2", "\xffa", " \xffa",
	}
	for _, k := range knownPatterns {
		for _, s := range cases {
			compare(t, k, s)
		}
	}
	// An invalid byte is one character of class other, like U+FFFD.
	for _, k := range knownPatterns {
		assert.Equal(t, []string{"a", " \xff\xfe", "b"}, pieces("a \xff\xfeb", k.match(nil, "a \xff\xfeb")), k.name)
		assert.Equal(t, []string{"a", " \ufffd\ufffd", "b"}, pieces("a \ufffd\ufffdb", k.match(nil, "a \ufffd\ufffdb")), k.name)
	}
}

func TestMatcherAppends(t *testing.T) {
	for _, k := range knownPatterns {
		dst := make([][2]int, 1, 64)
		dst[0] = [2]int{-1, -1}
		got := k.match(dst, "hi there")
		require.Len(t, got, 3, k.name)
		assert.Equal(t, [2]int{-1, -1}, got[0])
		assert.Equal(t, [][2]int{{0, 2}, {2, 8}}, got[1:])
		assert.Empty(t, k.match(nil, ""), k.name)
		allocs := testing.AllocsPerRun(10, func() {
			dst = k.match(dst[:0], "a  b   c    d don't 123 !?\n\n 你好")
		})
		assert.Zero(t, allocs, k.name)
	}
}
