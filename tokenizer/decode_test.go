package tokenizer

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decoderTokenizer is a WordLevel tokenizer over toks (token i has id i;
// "<|sp|>" is a special added token) with the given decoder.
func decoderTokenizer(t testing.TB, toks []string, decoder any) *Tokenizer {
	vocab := map[string]int{}
	for i, tk := range toks {
		vocab[tk] = i
	}
	var added []any
	if id, ok := vocab["<|sp|>"]; ok {
		added = append(added, addedTok(id, "<|sp|>", true))
	}
	return mustParse(t, tokJSON(t, map[string]any{
		"added_tokens": added,
		"decoder":      decoder,
		"model":        map[string]any{"type": "WordLevel", "vocab": vocab, "unk_token": toks[3]},
	}))
}

// testdata/decode.json holds token sequences decoded by Hugging Face
// (tokenizers 0.23.2) through decoder chains: the sentencepiece chains of
// Gemma and Llama 2, ByteLevel (with invalid and partial UTF-8), Metaspace,
// Strip, Replace on tokens and on fused text, BPEDecoder, and none.
// Sequences on which Hugging Face panics (Strip cuts that cross) are
// left out.
func TestDecodersMatchHuggingFace(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/decode.json")
	require.NoError(t, err)
	var g struct {
		Tokens []string `json:"tokens"`
		Chains map[string]struct {
			Decoder any `json:"decoder"`
			Cases   []struct {
				IDs      []int  `json:"ids"`
				Want     string `json:"want"`
				WantSkip string `json:"want_skip"`
			} `json:"cases"`
		} `json:"chains"`
	}
	require.NoError(t, json.Unmarshal(data, &g))
	require.NotEmpty(t, g.Chains)
	for name, ch := range g.Chains {
		tok := decoderTokenizer(t, g.Tokens, ch.Decoder)
		for _, c := range ch.Cases {
			got, err := tok.Decode(c.IDs, false)
			require.NoError(t, err)
			assert.Equal(t, c.Want, got, "%s: %v", name, c.IDs)
			got, err = tok.Decode(c.IDs, true)
			require.NoError(t, err)
			assert.Equal(t, c.WantSkip, got, "%s: %v skipping special", name, c.IDs)
			assert.Equal(t, c.Want, streamAll(t, tok, c.IDs, false), "%s: %v streamed", name, c.IDs)
			assert.Equal(t, c.WantSkip, streamAll(t, tok, c.IDs, true), "%s: %v streamed, skipping special", name, c.IDs)
		}
	}
}

// The streaming stages must give what the reference decoders (written
// as the crate's decode_chain) give, for any chain and any tokens.
func TestStreamingMatchesReferenceChain(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	toks := []string{"▁the", "▁", "a", "b", "é", "<0x41>", "<0xC3>", "<0xA9>", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>",
		"<0xFF>", "Ġhi", "Ġ", "ð", "Ł", "ĺ", "Ģ", "Ã", "x</w>", "</w>", "▁▁", "ab", "▁a▁", ""}
	steps := []decoder{
		byteLevelDec{}, byteFallbackDec{}, fuseDec{},
		metaspaceDec{repl: '▁', scheme: prependAlways}, metaspaceDec{repl: '▁', scheme: prependNever},
		stripDec{content: '▁', start: 1, stop: 1}, stripDec{content: 'a', start: 2},
		replaceDec{pattern: literalFinder{"▁"}, content: " "}, replaceDec{pattern: literalFinder{"▁▁"}, content: "_"},
		replaceDec{pattern: literalFinder{"ab"}, content: ""}, replaceDec{pattern: literalFinder{""}, content: "|"},
		bpeDec{suffix: "</w>"},
	}
	re, err := compileRegexp2("a+|▁")
	require.NoError(t, err)
	steps = append(steps, replaceDec{pattern: re, content: "#"})
	for trial := range 3000 {
		var chain []decoder
		for n := 1 + rng.IntN(4); n > 0; n-- {
			chain = append(chain, steps[rng.IntN(len(steps))])
		}
		var in []string
		for n := rng.IntN(10); n > 0; n-- {
			in = append(in, toks[rng.IntN(len(toks))])
		}
		want := decodeChain(chain, append([]string(nil), in...), false)
		p := newPipe(chain, false)
		var got strings.Builder
		for _, tk := range in {
			p.emit(0, tk)
			got.Write(p.out)
			p.out = p.out[:0]
		}
		p.flush()
		got.Write(p.out)
		require.Equal(t, want, got.String(), "trial %d: chain %#v on %q", trial, chain, in)
	}
}

func TestStreamDecoderWaitsForCompleteCharacters(t *testing.T) {
	t.Parallel()
	tok := mustParse(t, byteLevelJSON(t))
	text := "家族 👨‍👩‍👧 ok"
	ids := tok.Encode(text, EncodeOptions{})
	d := tok.NewStreamDecoder(false)
	var out strings.Builder
	for i, id := range ids {
		s, err := d.Next(id)
		require.NoError(t, err)
		assert.NotContains(t, s, "\uFFFD", "piece %d", i)
		out.WriteString(s)
		// What was emitted so far is a prefix of the text, and the
		// prefix decode says the same up to its incomplete tail.
		require.True(t, strings.HasPrefix(text, out.String()))
		prefix, err := tok.Decode(ids[:i+1], false)
		require.NoError(t, err)
		assert.Equal(t, out.String(), strings.TrimRight(prefix, "\uFFFD"))
	}
	out.WriteString(d.Flush())
	assert.Equal(t, text, out.String())
	// A truncated sequence is flushed as one U+FFFD, as Decode gives.
	d = tok.NewStreamDecoder(false)
	var half strings.Builder
	for _, id := range ids[:3] {
		s, _ := d.Next(id)
		half.WriteString(s)
	}
	half.WriteString(d.Flush())
	whole, _ := tok.Decode(ids[:3], false)
	assert.Equal(t, whole, half.String())
}

func TestDecodeUnknownID(t *testing.T) {
	t.Parallel()
	tok := mustParse(t, byteLevelJSON(t))
	_, err := tok.Decode([]int{1, tok.VocabSize() + 5}, false)
	var idErr *IDError
	require.True(t, errors.As(err, &idErr))
	assert.Equal(t, tok.VocabSize()+5, idErr.ID)
	assert.Equal(t, tok.VocabSize(), idErr.VocabSize)
	assert.Contains(t, err.Error(), "size")
	d := tok.NewStreamDecoder(false)
	_, err = d.Next(-1)
	require.True(t, errors.As(err, &idErr))
	s, err := d.Next(int('a'))
	require.NoError(t, err)
	assert.Equal(t, "a", s, "the decoder goes on after a bad id")
}

func TestLossyUTF8(t *testing.T) {
	t.Parallel()
	// Rust's String::from_utf8_lossy: one U+FFFD per maximal invalid
	// subsequence (a valid but truncated prefix counts as one).
	const r = "\uFFFD"
	cases := []struct{ in, want string }{
		{"abc", "abc"},
		{"\xF0\x9F\x98\x80", "😀"},
		{"\xF0\x9F\x98", r},
		{"\xF0\x9F\x98a", r + "a"},
		{"\xF0\x9F", r},
		{"\xE0\x80", r + r},         // E0 needs A0..BF next
		{"\xED\xA0\x80", r + r + r}, // a surrogate
		{"\xC0\xAF", r + r},         // overlong
		{"\xF4\x90\x80\x80", r + r + r + r},
		{"a\xFFb", "a" + r + "b"},
		{"\xE4\xBD", r},
		{"\xE4\xBD\xE4\xBD\xA0", r + "你"},
		{"\x80\x80", r + r},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, validUTF8(c.in), "%q", c.in)
		// Streamed byte by byte through the ByteLevel stage.
		p := newPipe([]decoder{byteLevelDec{}}, false)
		for i := 0; i < len(c.in); i++ {
			p.emit(0, byteToUTF8[c.in[i]])
		}
		p.flush()
		assert.Equal(t, c.want, string(p.out), "%q streamed", c.in)
	}
}
