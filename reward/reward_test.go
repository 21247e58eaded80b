package reward

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func score(t *testing.T, f Func, s Sample) float64 {
	t.Helper()
	v, err := f(context.Background(), s)
	require.NoError(t, err)
	return v
}

func TestExactMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, ref string
		want      float64
	}{
		{"42", "42", 1},
		{"  42\n", "42 ", 1},
		{"42.", "42", 0},
		{"", "", 1},
		{"Paris", "paris", 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, score(t, ExactMatch(), Sample{Text: tt.text, Reference: tt.ref}), "%q vs %q", tt.text, tt.ref)
	}
}

func TestLastInteger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want int64
		ok   bool
	}{
		{"the answer is 42", 42, true},
		{"3 + 4 = 7.", 7, true},
		{"-5", -5, true},
		{"x-5", -5, true},
		{"1,234 apples", 1234, true},
		{"a,1", 1, true},
		{"no digits", 0, false},
		{"", 0, false},
		{"99999999999999999999", 0, false}, // overflows int64
	}
	for _, tt := range tests {
		got, ok := LastInteger(tt.text)
		assert.Equal(t, tt.ok, ok, tt.text)
		assert.Equal(t, tt.want, got, tt.text)
	}
}

// TestLastIntegerReference checks LastInteger against a naive reference on
// generated texts: the integer formatted last in the text is the one found.
func TestLastIntegerReference(t *testing.T) {
	t.Parallel()
	for i := range 500 {
		n := int64(i*7919 - 1_000_000)
		text := "step " + strconv.Itoa(i) + ": result " + strconv.FormatInt(n, 10) + " done"
		got, ok := LastInteger(text)
		require.True(t, ok)
		assert.Equal(t, n, got, text)
	}
}

func TestFinalInteger(t *testing.T) {
	t.Parallel()
	f := FinalInteger()
	assert.Equal(t, 1.0, score(t, f, Sample{Text: "so 12*3 = 36", Reference: "36"}))
	assert.Equal(t, 0.0, score(t, f, Sample{Text: "so 12*3 = 35", Reference: "36"}))
	assert.Equal(t, 1.0, score(t, f, Sample{Text: "total: 1,000", Reference: "1000"}))
	_, err := f(context.Background(), Sample{Text: "1", Reference: "one"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"one"`)
}

func TestFormat(t *testing.T) {
	t.Parallel()
	f, err := Format(`^<answer>\d+</answer>$`)
	require.NoError(t, err)
	assert.Equal(t, 1.0, score(t, f, Sample{Text: "<answer>12</answer>"}))
	assert.Equal(t, 0.0, score(t, f, Sample{Text: "answer 12"}))
	_, err = Format("(")
	require.Error(t, err)
}

func TestLengthPenalty(t *testing.T) {
	t.Parallel()
	f := LengthPenalty(3, 0.5, 2)
	tests := []struct {
		n         int
		truncated bool
	}{{0, false}, {3, false}, {5, false}, {5, true}, {10, true}}
	for _, tt := range tests {
		want := -0.5 * float64(max(tt.n-3, 0))
		if tt.truncated {
			want -= 2
		}
		got := score(t, f, Sample{Tokens: make([]int, tt.n), Truncated: tt.truncated})
		assert.InDelta(t, want, got, 1e-12, "n=%d", tt.n)
	}
}

func TestSum(t *testing.T) {
	t.Parallel()
	format, err := Format(`\d`)
	require.NoError(t, err)
	f := Sum(Term{1, FinalInteger()}, Term{0.25, format}, Term{1, LengthPenalty(2, 0.1, 0)})
	s := Sample{Text: "= 7", Reference: "7", Tokens: make([]int, 4)}
	want := 1*1.0 + 0.25*1.0 + (-0.1 * 2)
	assert.InDelta(t, want, score(t, f, s), 1e-12)

	boom := errors.New("boom")
	failing := Sum(Term{1, ExactMatch()}, Term{1, func(context.Context, Sample) (float64, error) { return 0, boom }})
	_, err = failing(context.Background(), s)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "term 1")

	inf := Sum(Term{1, func(context.Context, Sample) (float64, error) { return math.Inf(1), nil }})
	_, err = inf(context.Background(), s)
	require.Error(t, err)
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "hello world", Normalize("  Hello \n\t WORLD "))
	assert.Equal(t, "", Normalize("   "))
}

func FuzzLastInteger(f *testing.F) {
	for _, s := range []string{"42", "-1,000", "a1b2", ",,", "-", "9,99,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := LastInteger(s)
		if !ok {
			return
		}
		// The value found must be written in the text.
		assert.Contains(t, stripCommas(s), strconv.FormatInt(abs(v), 10))
	})
}

func stripCommas(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != ',' {
			out = append(out, s[i])
		}
	}
	return string(out)
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
