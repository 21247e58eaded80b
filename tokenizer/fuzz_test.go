package tokenizer

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzParse: any bytes give a tokenizer or an error, never a panic; a
// tokenizer encodes and decodes.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"bytelevel.json", "sentencepiece.json", "flags.json", "wordlevel.json"} {
		data, err := os.ReadFile("testdata/" + name)
		require.NoError(f, err)
		f.Add(data)
		f.Add(data[:len(data)*2/3])
	}
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`))
	f.Add([]byte(`{"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed", "invert": true}}`))
	f.Add([]byte(`{"model": {"vocab": {"a": 0}, "merges": [["a", "a"]]}, "decoder": {"type": "Strip", "content": "a", "start": 3, "stop": 9}}`))
	f.Add([]byte(`{"added_tokens": [{"content": "x", "lstrip": true, "rstrip": true, "single_word": true}], "model": {"type": "WordLevel", "vocab": {" ": 7}, "unk_token": " "}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data, nil)
		if err != nil {
			require.Nil(t, tok)
			return
		}
		for _, text := range []string{"", "Hello wörld <s> 123  \n\t", "x y x", "\xff\xfe a"} {
			ids := tok.Encode(text, EncodeOptions{AddSpecialTokens: true})
			_, _ = tok.Decode(ids, false)
			_, _ = tok.Decode(ids, true)
			_ = tok.Encode(text, EncodeOptions{SplitSpecialTokens: true})
		}
		_, _ = tok.Decode([]int{0, 1, 2, -1}, false)
		_ = tok.VocabSize()
	})
}

// plainByteLevel is the byte-level test tokenizer without a normalizer,
// so that decoding gives back exactly the text.
func plainByteLevel(t testing.TB) *Tokenizer {
	var tj map[string]any
	mustUnmarshal(t, byteLevelJSON(t), &tj)
	tj["normalizer"] = nil
	return mustParse(t, tokJSON(t, tj))
}

// FuzzEncode: encoding never panics, and decoding gives back the text
// (valid UTF-8), or its lossy reading (invalid UTF-8).
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "Hello world", "  \n\n x\u00a0y", "don't 123456", "<|bos|>hi<|end|><think>",
		"😀👨‍👩‍👧", "\xf0\x9f\x98", "a\xffb", strings.Repeat("ab ", 100), "\U0002EBF0.", "x'ſab"} {
		f.Add(s)
	}
	tok := plainByteLevel(f)
	f.Fuzz(func(t *testing.T, text string) {
		want := text
		if !utf8.ValidString(text) {
			want = validUTF8(text)
		}
		for _, opt := range []EncodeOptions{{}, {SplitSpecialTokens: true}} {
			ids := tok.Encode(text, opt)
			got, err := tok.Decode(ids, false)
			require.NoError(t, err)
			require.Equal(t, want, got, "%+v", opt)
		}
	})
}

// FuzzStreamDecoder: what Next and Flush return, joined, is Decode.
func FuzzStreamDecoder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte{200, 201, 7, 7, 255, 3, 9})
	f.Add([]byte("hello \xe4\xbd\xa0 world"))
	toks := []*Tokenizer{mustParse(f, byteLevelJSON(f)), mustParse(f, sentencepieceJSON(f)),
		mustParse(f, flagsJSON(f)), mustParse(f, wordLevelJSON(f))}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, tok := range toks {
			ids := make([]int, 0, len(raw)/2)
			for i := 0; i+1 < len(raw); i += 2 {
				ids = append(ids, (int(raw[i])<<8|int(raw[i+1]))%tok.VocabSize())
			}
			for _, skip := range []bool{false, true} {
				want, err := tok.Decode(ids, skip)
				require.NoError(t, err)
				require.Equal(t, want, streamAll(t, tok, ids, skip))
			}
		}
	})
}
