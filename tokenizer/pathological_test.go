package tokenizer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathological are long runs that make backtracking engines slow or
// overflow their stacks (tiktoken's "^"*1e6, openai/tiktoken#245).
func pathological() map[string]string {
	return map[string]string{
		"spaces":   strings.Repeat(" ", 200_000),
		"newlines": strings.Repeat("\n", 200_000),
		"carets":   strings.Repeat("^", 200_000),
		"digits":   strings.Repeat("7", 200_000),
		"letters":  strings.Repeat("a", 100_000),
		"mixed":    strings.Repeat(" \t", 50_000) + "y",
		"nbsp":     strings.Repeat("\u00a0", 50_000) + "x",
	}
}

// They finish (no time limit is asserted) and round-trip, through the
// hand-written splitter and through regexp2.
func TestPathologicalInputs(t *testing.T) {
	t.Parallel()
	tj := byteLevelJSON(t)
	for _, noFast := range []bool{false, true} {
		tok, err := parseTokenizer(tj, noFast)
		require.NoError(t, err)
		for name, text := range pathological() {
			ids := tok.Encode(text, EncodeOptions{})
			require.NotEmpty(t, ids, name)
			got, err := tok.Decode(ids, false)
			require.NoError(t, err)
			assert.True(t, got == text, "%s (regexp2 only: %v): the decode differs", name, noFast)
		}
	}
}

func TestPathologicalInputsQwen3(t *testing.T) {
	if testing.Short() {
		t.Skip("long inputs on the real vocabulary")
	}
	t.Parallel()
	tok := shared(t, "qwen3")
	for name, text := range pathological() {
		ids := tok.Encode(text, EncodeOptions{})
		got, err := tok.Decode(ids, false)
		require.NoError(t, err)
		assert.True(t, got == text, "%s: the decode differs", name)
	}
}
