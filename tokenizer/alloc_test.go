package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// raceEnabled is whether the test binary was built with -race, under which
// sync.Pool drops items at random and allocation counts mean nothing.
var raceEnabled = func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}()

// gemmaLikeJSON is testdata/sentencepiece.json reshaped as Gemma 3 is: the
// normalizer a lone Replace of " " by "▁", a Split on " " that cuts
// nothing once it has run, and "\n" an added token, so that each line is
// one word.
func gemmaLikeJSON(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/sentencepiece.json")
	require.NoError(t, err)
	var doc map[string]any
	mustUnmarshal(t, data, &doc)
	model := doc["model"].(map[string]any)
	vocab := model["vocab"].(map[string]any)
	nl := len(vocab)
	vocab["\n"] = nl
	doc["added_tokens"] = append(doc["added_tokens"].([]any), addedTok(nl, "\n", false))
	doc["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}
	doc["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"String": " "},
		"behavior": "MergedWithPrevious", "invert": false}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return out
}

// gemmaLikeText is lines of words from the synthetic vocabulary (and a few
// characters outside it, for byte_fallback), joined by "\n": most lines
// longer than the word cache takes, some shorter, some empty.
func gemmaLikeText(seed uint64, size int) string {
	r := rand.New(rand.NewPCG(seed, 0))
	words := []string{"the", "and", "an", "in", "été", "tea", "hen", "T,", "è.", "x", "ß", "日本", "quiz"}
	var b strings.Builder
	for b.Len() < size {
		n := r.IntN(120)
		for i := range n {
			if i > 0 {
				b.WriteString(strings.Repeat(" ", 1+r.IntN(2)))
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestEncodeAllocs checks the bound on the warm path: encoding a text
// whose words the cache cannot take (lines of Gemma 3, several KB long)
// allocates nothing with AppendEncode into a slice with room, whatever the
// text's length (Encode adds its result slice).
func TestEncodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	toks := map[string]*Tokenizer{"gemma-like": mustParse(t, gemmaLikeJSON(t))}
	if tok, _ := loadReal("gemma3"); tok != nil {
		toks["gemma3"] = tok
	}
	texts := map[string]string{
		"lines":    gemmaLikeText(1, 4096),
		"one word": strings.ReplaceAll(gemmaLikeText(2, 4096), "\n", " "),
		"no space": strings.ReplaceAll(gemmaLikeText(3, 4096), " ", "▁"),
	}
	for name, tok := range toks {
		for textName, text := range texts {
			dst := tok.AppendEncode(nil, text, EncodeOptions{})
			allocs := testing.AllocsPerRun(100, func() {
				dst = tok.AppendEncode(dst[:0], text, EncodeOptions{})
			})
			assert.Zero(t, allocs, "AppendEncode: %s, %s", name, textName)
		}
	}
}

// TestLiteralReplaceSameIDs checks that a lone literal Replace, which
// encodeText runs itself, gives the ids of the normalizer's own path.
func TestLiteralReplaceSameIDs(t *testing.T) {
	t.Parallel()
	fast := mustParse(t, gemmaLikeJSON(t))
	slow := mustParse(t, gemmaLikeJSON(t))
	slow.normalizer = normSequence{slow.normalizer}
	_, _, ok := fast.literalReplace()
	require.True(t, ok)
	_, _, ok = slow.literalReplace()
	require.False(t, ok)
	// Twice over: on the second pass the short words come from the cache.
	for pass := range 2 {
		for seed := range uint64(50) {
			text := gemmaLikeText(seed, int(seed)*97)
			for _, opt := range []EncodeOptions{{}, {AddSpecialTokens: true}} {
				assert.Equal(t, slow.Encode(text, opt), fast.Encode(text, opt), "pass %d, seed %d", pass, seed)
			}
		}
	}
}
