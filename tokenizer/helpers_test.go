package tokenizer

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/internal/hforacle"
)

// Helpers that build small tokenizer.json files for the tests.

// byteVocab returns the 256 ByteLevel characters with ids 0..255 in byte
// order.
func byteVocab() map[string]int {
	v := make(map[string]int, 256)
	for b := range 256 {
		v[byteToUTF8[b]] = b
	}
	return v
}

// trainByteLevel learns n merges from the words of text, byte-level, the
// naive way: merge the most frequent adjacent pair (ties: the smaller
// pair of strings), n times. It returns the vocabulary (256 bytes, then
// one token per merge) and the merges.
func trainByteLevel(words []string, n int) (map[string]int, [][2]string) {
	vocab := byteVocab()
	type word struct {
		syms  []string
		count int
	}
	counts := map[string]int{}
	for _, w := range words {
		counts[string(appendByteLevel(nil, w))]++
	}
	var ws []word
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var syms []string
		for _, r := range k {
			syms = append(syms, string(r))
		}
		ws = append(ws, word{syms, counts[k]})
	}
	var merges [][2]string
	for len(merges) < n {
		pairs := map[[2]string]int{}
		for _, w := range ws {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.count
			}
		}
		var best [2]string
		bestN := 0
		for p, c := range pairs {
			if c > bestN || c == bestN && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestN = p, c
			}
		}
		if bestN == 0 {
			break
		}
		merges = append(merges, best)
		joined := best[0] + best[1]
		if _, ok := vocab[joined]; !ok {
			vocab[joined] = len(vocab)
		}
		for wi := range ws {
			s := ws[wi].syms
			out := s[:0:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, joined)
					i++
				} else {
					out = append(out, s[i])
				}
			}
			ws[wi].syms = out
		}
	}
	return vocab, merges
}

// sampleText is English prose for training the test vocabularies.
const sampleText = `The tokenizer reads the text, cuts it into words, and turns each word
into the tokens of its vocabulary. A word that the vocabulary knows whole is one
token; another is built from the pieces that its merges allow, the most frequent
first. Numbers such as 1234 and 3.14 are split into digits, and white space
between words is kept, so that decoding the tokens gives back the text exactly,
every space, tab and newline of it. Don't worry: it's what the model was trained on.
`

func sampleWords() []string {
	var words []string
	for _, w := range strings.Fields(sampleText) {
		words = append(words, " "+w, w)
	}
	return words
}

// qwenPattern is the split pattern of Qwen2/Qwen3 (Regex Q in the note).
const qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// llamaPattern is Llama 3's (tiktoken cl100k).
const llamaPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// tokJSON completes a tokenizer.json object (version, nulls) and
// marshals it.
func tokJSON(t testing.TB, parts map[string]any) []byte {
	t.Helper()
	full := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": []any{},
		"normalizer": nil, "pre_tokenizer": nil, "post_processor": nil, "decoder": nil,
	}
	for k, v := range parts {
		full[k] = v
	}
	b, err := json.Marshal(full)
	require.NoError(t, err)
	return b
}

// addedTok is an added_tokens entry with every field Hugging Face
// requires.
func addedTok(id int, content string, special bool) map[string]any {
	return map[string]any{"id": id, "content": content, "single_word": false, "lstrip": false,
		"rstrip": false, "normalized": false, "special": special}
}

func mergeStrings(merges [][2]string) []string {
	out := make([]string, len(merges))
	for i, m := range merges {
		out[i] = m[0] + " " + m[1]
	}
	return out
}

// byteLevelJSON is a Qwen3-shaped tokenizer: Split(Regex Q), ByteLevel,
// BPE trained on sampleText, a few added tokens, ByteLevel decoder, and a
// template adding <|bos|>.
func byteLevelJSON(t testing.TB) []byte {
	vocab, merges := trainByteLevel(sampleWords(), 300)
	n := len(vocab)
	added := []any{
		addedTok(n, "<|bos|>", true),
		addedTok(n+1, "<|end|>", true),
		addedTok(n+2, "<think>", false),
		addedTok(n+3, "</think>", false),
	}
	return tokJSON(t, map[string]any{
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair":           []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<|bos|>": map[string]any{"id": "<|bos|>", "ids": []int{n}, "tokens": []string{"<|bos|>"}}},
		},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "dropout": nil,
			"unk_token": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false},
	})
}

// sentencepieceJSON is a Llama 2–shaped tokenizer: Prepend and Replace
// normalizers, BPE with byte_fallback and <unk>, the sentencepiece decoder
// chain.
func sentencepieceJSON(t testing.TB) []byte {
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := range 256 {
		vocab[fallbackToken(byte(b))] = 3 + b
	}
	var merges []string
	add := func(tok string) {
		if _, ok := vocab[tok]; !ok {
			vocab[tok] = len(vocab)
		}
	}
	for _, r := range "▁abcdefghijklmnopqrstuvwxyzTéè.," {
		add(string(r))
	}
	for _, m := range [][2]string{{"▁", "t"}, {"h", "e"}, {"▁t", "he"}, {"▁", "a"}, {"i", "n"}, {"▁a", "n"}, {"▁an", "d"}, {"é", "t"}} {
		add(m[0] + m[1])
		merges = append(merges, m[0]+" "+m[1])
	}
	return tokJSON(t, map[string]any{
		"added_tokens": []any{
			addedTok(0, "<unk>", true),
			addedTok(1, "<s>", true),
			addedTok(2, "</s>", true),
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair":           []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}},
		},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "dropout": nil,
			"unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true},
	})
}

func mustParse(t testing.TB, tokJSON []byte) *Tokenizer {
	t.Helper()
	tok, err := Parse(tokJSON, nil)
	require.NoError(t, err)
	return tok
}

// hfDir is where .ci/hf-oracle installs the real files (bench_test.go's).
func hfDir() string { return hforacle.Dir() }

// realTokenizer loads one of the real model folders, or skips the test
// (fails it under CI=true).
func realTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tok, err := Load(hforacle.Model(t, name))
	require.NoError(t, err)
	return tok
}

// flagsJSON exercises the added-token flags: lstrip/rstrip, single_word,
// normalized tokens (matched after a Lowercase normalizer, decoded in
// their normalized form), overlapping tokens for leftmost-longest, on a
// byte-level BPE without merges (one id per byte shows every cut).
func flagsJSON(t testing.TB) []byte {
	vocab := byteVocab()
	n := len(vocab)
	tok := func(i int, content string, kv ...any) map[string]any {
		m := map[string]any{"id": n + i, "content": content, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": false}
		for k := 0; k < len(kv); k += 2 {
			m[kv[k].(string)] = kv[k+1]
		}
		return m
	}
	return tokJSON(t, map[string]any{
		"added_tokens": []any{
			tok(0, "<s>", "special", true),
			tok(1, "[MASK]", "special", true, "lstrip", true, "rstrip", true),
			tok(2, "<w>", "single_word", true),
			tok(3, "CAT", "normalized", true),
			tok(4, "<|x|>"),
			tok(5, "<|x|>y"),
			tok(6, "<|"),
			tok(7, "ñ", "normalized", true, "special", true),
			tok(8, "", "special", true), // ignored, as Hugging Face ignores it
		},
		"normalizer": map[string]any{"type": "Lowercase"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
	})
}

// wordLevelJSON is a character vocabulary, as tandem's own: WordLevel over
// single characters, cut by Split((?m).) — Oniguruma's m lets the dot
// take a newline — and fused back on decode.
func wordLevelJSON(t testing.TB) []byte {
	vocab := map[string]int{"<unk>": 0, "<eos>": 1}
	for _, r := range "\n abcdefghijklmnopqrstuvwxyz.,!?'0123456789" {
		vocab[string(r)] = len(vocab)
	}
	return tokJSON(t, map[string]any{
		"added_tokens": []any{addedTok(1, "<eos>", true)},
		"pre_tokenizer": map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(?m)."},
			"behavior": "Isolated", "invert": false},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "<eos>", "type_id": 0}}},
			"pair":           []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{"<eos>": map[string]any{"id": "<eos>", "ids": []int{1}, "tokens": []string{"<eos>"}}},
		},
		"decoder": map[string]any{"type": "Fuse"},
		"model":   map[string]any{"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
	})
}

// testdataFiles are the synthetic tokenizers written to testdata/ (the
// golden outputs in testdata/golden.json are Hugging Face's on them).
func testdataFiles(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"bytelevel.json":     byteLevelJSON(t),
		"sentencepiece.json": sentencepieceJSON(t),
		"flags.json":         flagsJSON(t),
		"wordlevel.json":     wordLevelJSON(t),
	}
}

func mustUnmarshal(t testing.TB, data []byte, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(data, v))
}
