package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goldenCase is one line of testdata/golden.json: what Hugging Face's
// tokenizers 0.23.2 (its npm binding) gives for a text on one of the
// synthetic tokenizers in testdata/.
type goldenCase struct {
	Text       string `json:"text"`
	Add        bool   `json:"add"`
	IDs        []int  `json:"ids"`
	Decode     string `json:"decode"`
	DecodeSkip string `json:"decode_skip"`
}

func TestSyntheticTokenizersMatchHuggingFace(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/golden.json")
	require.NoError(t, err)
	var golden map[string][]goldenCase
	require.NoError(t, json.Unmarshal(data, &golden))
	require.Len(t, golden, 4)
	for file, cases := range golden {
		tj, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		for _, noFast := range []bool{false, true} {
			tok, err := parseTokenizer(tj, noFast)
			require.NoError(t, err, file)
			for _, c := range cases {
				if c.IDs == nil {
					c.IDs = []int{}
				}
				got := tok.Encode(c.Text, EncodeOptions{AddSpecialTokens: c.Add})
				assert.Equal(t, c.IDs, got, "%s: encode %q (add %v)", file, c.Text, c.Add)
				dec, err := tok.Decode(c.IDs, false)
				require.NoError(t, err)
				assert.Equal(t, c.Decode, dec, "%s: decode %v", file, c.IDs)
				dec, err = tok.Decode(c.IDs, true)
				require.NoError(t, err)
				assert.Equal(t, c.DecodeSkip, dec, "%s: decode %v skipping special", file, c.IDs)
				assert.Equal(t, c.Decode, streamAll(t, tok, c.IDs, false), "%s: stream %v", file, c.IDs)
			}
		}
	}
}

// streamAll decodes ids one by one and concatenates the pieces.
func streamAll(t testing.TB, tok *Tokenizer, ids []int, skip bool) string {
	d := tok.NewStreamDecoder(skip)
	var b strings.Builder
	for _, id := range ids {
		s, err := d.Next(id)
		require.NoError(t, err)
		b.WriteString(s)
	}
	b.WriteString(d.Flush())
	return b.String()
}

func TestSplitSpecialTokens(t *testing.T) {
	t.Parallel()
	tok := mustParse(t, byteLevelJSON(t))
	bos, _ := tok.TokenID("<|bos|>")
	think, _ := tok.TokenID("<think>")
	plain := tok.Encode("<|bos|>", EncodeOptions{SplitSpecialTokens: true})
	assert.NotContains(t, plain, bos, "special token text is plain text")
	assert.Greater(t, len(plain), 1)
	dec, err := tok.Decode(plain, false)
	require.NoError(t, err)
	assert.Equal(t, "<|bos|>", dec)
	// Non-special added tokens still match.
	assert.Equal(t, []int{think}, tok.Encode("<think>", EncodeOptions{SplitSpecialTokens: true}))
	// The template's BOS is still added.
	assert.Equal(t, bos, tok.Encode("x", EncodeOptions{SplitSpecialTokens: true, AddSpecialTokens: true})[0])
}
