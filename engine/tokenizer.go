package engine

import (
	"fmt"
	"strings"
)

// The tokenizer's ids. Printable ASCII (space through '~') maps to
// FirstPrintable + (c − ' ').
const (
	BOS            = 0  // beginning of sequence
	EOS            = 1  // end of sequence
	Newline        = 2  // '\n'
	FirstPrintable = 3  // ' '
	VocabSize      = 98 // BOS, EOS, '\n' and the 95 printable ASCII characters
)

// Tokenizer is the embedded model's character-level tokenizer: one token per
// printable ASCII character or newline, plus BOS and EOS. The zero value is
// ready to use and safe for concurrent use.
type Tokenizer struct{}

// EncodeError reports a character the tokenizer cannot encode.
type EncodeError struct {
	Char rune
	Pos  int // byte offset in the input
}

func (e *EncodeError) Error() string {
	return fmt.Sprintf("engine: cannot encode %q (U+%04X) at byte %d; the tokenizer knows printable ASCII and newline", e.Char, e.Char, e.Pos)
}

// Encode returns one token per character of s (no BOS or EOS added). A
// character outside printable ASCII and newline is an *EncodeError.
func (Tokenizer) Encode(s string) ([]int, error) {
	out := make([]int, 0, len(s))
	for i, r := range s {
		id, ok := tokenOf(r)
		if !ok {
			return nil, &EncodeError{Char: r, Pos: i}
		}
		out = append(out, id)
	}
	return out, nil
}

func tokenOf(r rune) (int, bool) {
	switch {
	case r == '\n':
		return Newline, true
	case r >= ' ' && r <= '~':
		return FirstPrintable + int(r-' '), true
	}
	return 0, false
}

// Decode returns the text of ids. BOS and EOS decode to nothing; an id
// outside the vocabulary decodes to U+FFFD.
func (Tokenizer) Decode(ids []int) string {
	var b strings.Builder
	b.Grow(len(ids))
	for _, id := range ids {
		b.WriteString(tokenText(id))
	}
	return b.String()
}

func tokenText(id int) string {
	switch {
	case id == BOS || id == EOS:
		return ""
	case id == Newline:
		return "\n"
	case id >= FirstPrintable && id < VocabSize:
		return string(rune(' ' + id - FirstPrintable))
	}
	return "\uFFFD"
}
