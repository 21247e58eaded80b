package basemodel

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/tokenizer"
)

// The shipped tokenizer.json encodes and decodes as the engine's own
// character tokenizer does: every character, random strings, BOS with
// add_special_tokens, BOS and EOS dropped when special tokens are skipped.
func TestShippedTokenizerIsTheEngineVocabulary(t *testing.T) {
	t.Parallel()
	tok, err := Tokenizer()
	require.NoError(t, err)
	assert.Equal(t, engine.VocabSize, tok.VocabSize())
	var eng engine.Tokenizer
	alphabet := []rune{'\n'}
	for c := ' '; c <= '~'; c++ {
		alphabet = append(alphabet, c)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", "What is 12 + 35?", "a\nb ~", "  \n\n  "}
	for _, c := range alphabet {
		cases = append(cases, string(c))
	}
	for range 500 {
		r := make([]rune, rng.IntN(40))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(r))
	}
	for _, s := range cases {
		want, err := eng.Encode(s)
		require.NoError(t, err)
		got := tok.Encode(s, tokenizer.EncodeOptions{})
		require.Equal(t, want, got, "%q", s)
		withBOS := tok.Encode(s, tokenizer.EncodeOptions{AddSpecialTokens: true})
		require.Equal(t, append([]int{engine.BOS}, want...), withBOS, "%q with special tokens", s)
		text, err := tok.Decode(append(withBOS, engine.EOS), true)
		require.NoError(t, err)
		assert.Equal(t, eng.Decode(append(withBOS, engine.EOS)), text, "%q", s)
		assert.Equal(t, s, text)
	}
	bos, ok := tok.TokenID("<bos>")
	assert.True(t, ok)
	assert.Equal(t, engine.BOS, bos)
	eos, ok := tok.TokenID("<eos>")
	assert.True(t, ok)
	assert.Equal(t, engine.EOS, eos)
	assert.True(t, tok.IsSpecial(engine.BOS))
	// A character outside the vocabulary is the unk token, <eos> (where
	// engine.Tokenizer refuses it); Hugging Face's tokenizers does the same
	// with this file.
	assert.Equal(t, []int{70, engine.EOS, 72}, tok.Encode("cée", tokenizer.EncodeOptions{}))
	assert.Equal(t, "<eos>", tok.Config().EOSToken)
}

func TestTokenizerFiles(t *testing.T) {
	t.Parallel()
	tj, cj := TokenizerFiles()
	require.Equal(t, tokenizerJSON, tj)
	require.Equal(t, tokenizerConfigJSON, cj)
	require.NotEmpty(t, tj)
	require.NotEmpty(t, cj)
}

// TokenText of the shipped tokenizer is the character vocabulary's text
// of each token, which the engine's samplers match stop strings against by
// default.
func TestTokenText(t *testing.T) {
	t.Parallel()
	tok, err := Tokenizer()
	require.NoError(t, err)
	var chars engine.Tokenizer
	for id := engine.Newline; id < engine.VocabSize; id++ {
		require.Equal(t, chars.Decode([]int{id}), tok.TokenText(id), "token %d", id)
	}
	require.Equal(t, "", tok.TokenText(1<<20), "an unknown id")
}
