package tokenizer

import (
	"encoding/json"
	"os"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/normalize.json holds normalizers applied to texts, with what
// Hugging Face's normalize_str gives (tokenizers 0.23.2): every normalizer
// this package supports, including empty-pattern and empty-match Replace,
// and the Unicode forms on marks newer than Unicode 9.0, which the
// crate's normalizer does not know (it neither reorders nor composes
// them).
func TestNormalizersMatchHuggingFace(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/normalize.json")
	require.NoError(t, err)
	var cases []struct {
		Normalizer json.RawMessage `json:"normalizer"`
		Text       string          `json:"text"`
		Want       string          `json:"want"`
	}
	require.NoError(t, json.Unmarshal(data, &cases))
	require.NotEmpty(t, cases)
	for _, c := range cases {
		v, err := (&jreader{file: "test", data: c.Normalizer}).document(nil)
		require.NoError(t, err)
		n, err := loader{file: "test"}.normalizer(&v, "normalizer")
		require.NoError(t, err, string(c.Normalizer))
		got := c.Text
		if n != nil {
			got = n.normalize(c.Text, &scratch{})
		}
		assert.Equal(t, c.Want, got, "%s on %q", c.Normalizer, c.Text)
	}
}

func TestNormalizedTextCostsNoAllocation(t *testing.T) {
	// Not parallel: AllocsPerRun counts the whole process.
	nfc := unicodeNorm{form: norm.NFC}
	var sc scratch
	for _, s := range []string{"plain ASCII text", "déjà vu, 中文, ελληνικά"} {
		allocs := testing.AllocsPerRun(100, func() { _ = nfc.normalize(s, &sc) })
		assert.Zero(t, allocs, s)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = lowercase{}.normalize("already lower", &sc) }))
}
