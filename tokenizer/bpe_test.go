package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveMerge is the reference BPE: while some adjacent pair has a merge,
// merge the pair of lowest rank, the leftmost among equals.
func naiveMerge(syms []int32, ranks map[[2]int32]int, ids map[[2]int32]int32) []int32 {
	syms = append([]int32(nil), syms...)
	for {
		best, bestRank := -1, 0
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := ranks[[2]int32{syms[i], syms[i+1]}]; ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			return syms
		}
		merged := ids[[2]int32{syms[best], syms[best+1]}]
		syms = append(append(syms[:best], merged), syms[best+2:]...)
	}
}

// randomBPE makes a vocabulary over a small alphabet and a merge table
// with some duplicate lines (the later one wins).
func randomBPE(rng *rand.Rand, alphabet []string, nMerges int) (map[string]int, [][2]string) {
	vocab := map[string]int{}
	var toks []string
	for _, a := range alphabet {
		vocab[a] = len(vocab)
		toks = append(toks, a)
	}
	var merges [][2]string
	for len(merges) < nMerges {
		if len(merges) > 0 && rng.IntN(10) == 0 {
			merges = append(merges, merges[rng.IntN(len(merges))]) // duplicate
			continue
		}
		a, b := toks[rng.IntN(len(toks))], toks[rng.IntN(len(toks))]
		if len(a)+len(b) > 8 {
			continue
		}
		if _, ok := vocab[a+b]; !ok {
			vocab[a+b] = len(vocab)
			toks = append(toks, a+b)
		}
		merges = append(merges, [2]string{a, b})
	}
	return vocab, merges
}

func TestBPEMatchesNaiveReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "c", "d"}
	for trial := range 60 {
		vocab, merges := randomBPE(rng, alphabet, 5+rng.IntN(60))
		ignore := trial%3 == 0
		ranks := map[[2]int32]int{}
		ids := map[[2]int32]int32{}
		for i, m := range merges {
			p := [2]int32{int32(vocab[m[0]]), int32(vocab[m[1]])}
			ranks[p], ids[p] = i, int32(vocab[m[0]+m[1]])
		}
		// The same model read two ways: characters looked up in the
		// vocabulary, and bytes mapped by a final ByteLevel (all of whose
		// characters the vocabulary then needs).
		charTok := mustParse(t, tokJSON(t, map[string]any{
			"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "ignore_merges": ignore},
		}))
		bv := byteVocab()
		for tok := range vocab {
			if _, ok := bv[tok]; !ok {
				bv[tok] = len(bv)
			}
		}
		byteTok := mustParse(t, tokJSON(t, map[string]any{
			"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
			"model":         map[string]any{"type": "BPE", "vocab": bv, "merges": mergeStrings(merges), "ignore_merges": ignore},
		}))
		require.True(t, byteTok.model.(*bpe).fastBytes)
		for range 40 {
			n := 1 + rng.IntN(24)
			word := ""
			var syms, bsyms []int32
			for range n {
				a := alphabet[rng.IntN(len(alphabet))]
				word += a
				syms = append(syms, int32(vocab[a]))
				bsyms = append(bsyms, int32(bv[a]))
			}
			want := naiveMerge(syms, ranks, ids)
			if id, ok := vocab[word]; ok && ignore {
				want = []int32{int32(id)}
			}
			for pass := range 2 { // the second pass reads the word cache
				got := charTok.Encode(word, EncodeOptions{})
				require.Equal(t, toInts(want), got, "trial %d word %q pass %d", trial, word, pass)
				// Byte path: translate the ids through the tokens' text.
				var wantB []int
				for _, id := range want {
					tokText, _ := charTok.Token(int(id))
					wantB = append(wantB, bv[tokText])
				}
				require.Equal(t, wantB, byteTok.Encode(word, EncodeOptions{}), "trial %d word %q (bytes)", trial, word)
			}
			_ = bsyms
		}
	}
}

func toInts(s []int32) []int {
	out := make([]int, len(s))
	for i, v := range s {
		out[i] = int(v)
	}
	return out
}

func TestBPEUnknownsAndByteFallback(t *testing.T) {
	t.Parallel()
	vocab := map[string]int{"<unk>": 0, "a": 1, "b": 2, "ab": 3, "<0xC3>": 4, "<0xA9>": 5}
	base := map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"a b"}, "unk_token": "<unk>"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name  string
		model map[string]any
		text  string
		want  []int
	}{
		{"unk each", with(), "xyab", []int{0, 0, 3}},
		{"fuse_unk", with("fuse_unk", true), "xyabz", []int{0, 3, 0}},
		{"byte_fallback", with("byte_fallback", true), "aéb", []int{1, 4, 5, 2}},
		// A character whose bytes are not all there falls to <unk>.
		{"byte_fallback partial", with("byte_fallback", true), "aèb", []int{1, 0, 2}},
		// As in Hugging Face, a pending unknown is flushed after the bytes.
		{"unk then bytes", with("byte_fallback", true, "fuse_unk", true), "xéab", []int{4, 5, 0, 3}},
		// Without an unknown token the character is dropped, and its
		// neighbours may then merge.
		{"no unk: dropped", map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"a b"}}, "axb", []int{3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tok := mustParse(t, tokJSON(t, map[string]any{"model": c.model}))
			assert.Equal(t, c.want, tok.Encode(c.text, EncodeOptions{}))
		})
	}
}

func TestBPEPrefixAndSuffix(t *testing.T) {
	t.Parallel()
	// WordPiece-style continuing prefix and an end-of-word suffix: the
	// merge of "a" and "##b" is "ab".
	vocab := map[string]int{"a": 0, "##b": 1, "ab": 2, "##c</w>": 3, "ab##c</w>": 4, "c</w>": 5, "a</w>": 6}
	tok := mustParse(t, tokJSON(t, map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": [][2]string{{"a", "##b"}},
			"continuing_subword_prefix": "##", "end_of_word_suffix": "</w>"},
	}))
	assert.Equal(t, []int{2, 3}, tok.Encode("abc", EncodeOptions{}))
	assert.Equal(t, []int{6}, tok.Encode("a", EncodeOptions{}))
	assert.Equal(t, []int{5}, tok.Encode("c", EncodeOptions{}))
}

func TestMergeTable(t *testing.T) {
	t.Parallel()
	mt := newMergeTable(1000)
	for i := range int32(1000) {
		mt.put(i, i*7, uint32(i), i+1)
	}
	mt.put(3, 21, 5000, 9) // a later duplicate replaces the rank
	for i := range int32(1000) {
		rank, id, ok := mt.get(i, i*7)
		require.True(t, ok)
		if i == 3 {
			assert.Equal(t, uint32(5000), rank)
			assert.Equal(t, int32(9), id)
			continue
		}
		assert.Equal(t, uint32(i), rank, fmt.Sprint(i))
		assert.Equal(t, i+1, id)
	}
	_, _, ok := mt.get(1, 1)
	assert.False(t, ok)
	assert.Equal(t, 1000, mt.n)
}

func TestWordLevelAfterByteLevel(t *testing.T) {
	t.Parallel()
	tok := mustParse(t, tokJSON(t, map[string]any{
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true},
		"model":         map[string]any{"type": "WordLevel", "vocab": map[string]int{"<unk>": 0, "Ġhello": 1, "Ġworld": 2}, "unk_token": "<unk>"},
	}))
	assert.Equal(t, []int{1, 2, 0}, tok.Encode("hello world there", EncodeOptions{}))
}

// Encode from many goroutines at once: the cache and the scratch pool are
// shared (run with -race).
func TestConcurrentEncode(t *testing.T) {
	t.Parallel()
	tok := mustParse(t, byteLevelJSON(t))
	texts := []string{sampleText, "Hello world, it's 2024!", "<think>x</think> 😀 中文", "  many   spaces  "}
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, EncodeOptions{AddSpecialTokens: i%2 == 0})
	}
	done := make(chan error)
	for g := range 8 {
		go func() {
			var err error
			for k := range 200 {
				i := (g + k) % len(texts)
				if got := tok.Encode(texts[i], EncodeOptions{AddSpecialTokens: i%2 == 0}); fmt.Sprint(got) != fmt.Sprint(want[i]) {
					err = fmt.Errorf("goroutine %d: %q: %v, want %v", g, texts[i], got, want[i])
				}
			}
			done <- err
		}()
	}
	for range 8 {
		assert.NoError(t, <-done)
	}
}

func TestWordCacheBounded(t *testing.T) {
	t.Parallel()
	c := newWordCache()
	for i := range wordCacheShards * wordCacheShardCap * 3 {
		c.put(fmt.Sprint("w", i), []int{i})
	}
	total := 0
	for i := range c.shards {
		n := len(c.shards[i].m)
		assert.LessOrEqual(t, n, wordCacheShardCap)
		total += n
	}
	assert.Positive(t, total)
	ids, ok := c.get(fmt.Sprint("w", wordCacheShards*wordCacheShardCap*3-1))
	require.True(t, ok, "the last word is cached")
	assert.Equal(t, []int32{int32(wordCacheShards*wordCacheShardCap*3 - 1)}, ids)
}
