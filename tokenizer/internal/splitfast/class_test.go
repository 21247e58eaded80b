package splitfast

import (
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClassTables checks the packed tables and the decoder against
// classOfRune's predicates on every code point.
func TestClassTables(t *testing.T) {
	t.Parallel()
	var buf [utf8.UTFMax]byte
	bad := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := other
		switch {
		case unicode.IsSpace(r):
			want = space
		case unicode.IsLetter(r) || unicode.Is(onigLetters, r):
			want = letter
		case unicode.IsNumber(r) || unicode.Is(onigNumbers, r):
			want = number
		}
		n := utf8.EncodeRune(buf[:], r)
		got, size := classAt(string(buf[:n]), 0)
		if r >= 0xD800 && r <= 0xDFFF {
			// Surrogates do not encode: EncodeRune writes U+FFFD.
			want, n = other, 3
		}
		if got != want || size != n {
			if bad++; bad <= 10 {
				t.Errorf("U+%04X: class %d size %d, want %d size %d", r, got, size, want, n)
			}
		}
	}
	assert.Zero(t, bad)
}

func TestClassOfInvalidBytes(t *testing.T) {
	t.Parallel()
	for b := 0x80; b <= 0xFF; b++ {
		c, n := classAt(string([]byte{byte(b)}), 0)
		assert.Equal(t, other, c, "byte %#x", b)
		assert.Equal(t, 1, n, "byte %#x", b)
	}
}

// TestOnigTablesAddOnlyUnassigned checks that the Unicode 15.1/16.0 patch
// only adds characters Go's tables do not know, and that those tables are
// still the ones the patch was read against. When the Go toolchain moves
// to a later Unicode version, re-derive onigLetters and onigNumbers from
// Hugging Face (Unicode 17.0 additions must then be removed, not added).
func TestOnigTablesAddOnlyUnassigned(t *testing.T) {
	t.Parallel()
	require.Equal(t, "15.0.0", unicode.Version, "onigLetters/onigNumbers were derived against Go's Unicode 15.0.0 tables")
	unassigned := unicode.Categories["Cn"]
	require.NotNil(t, unassigned)
	count := 0
	for _, tab := range []*unicode.RangeTable{onigLetters, onigNumbers} {
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if unicode.Is(tab, r) {
				count++
				assert.True(t, unicode.Is(unassigned, r), "U+%04X is assigned in Go's tables", r)
				assert.False(t, unicode.Is(onigLetters, r) && unicode.Is(onigNumbers, r), "U+%04X in both", r)
			}
		}
	}
	// Unicode 15.1 added 622 ideographs; 16.0 added 4,302 letters and 80 digits.
	assert.Equal(t, 622+4302+80, count)
}

// TestExtensionI checks the CJK Extension I range that Oniguruma treats as
// letters and regexp2 (Go's tables) does not.
func TestExtensionI(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x2EBF0, 0x2ED00, 0x2EE5D} {
		c, _ := classAt(string(r), 0)
		assert.Equal(t, letter, c, "U+%04X", r)
	}
	for _, r := range []rune{0x2EBEF, 0x2EE5E} {
		c, _ := classAt(string(r), 0)
		assert.Equal(t, other, c, "U+%04X", r)
	}
	for _, k := range knownPatterns {
		s := "𮯰."
		assert.Equal(t, []string{"𮯰", "."}, pieces(s, k.match(nil, s)), k.name)
		assert.Equal(t, []string{"𮯰."}, pieces(s, refRanges(t, k.exact, s)), "regexp2 %s: one run of non-letters", k.name)
	}
}
