package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
)

// A normalizer rewrites one piece of text (the text between the
// normalized:false added tokens; Hugging Face normalizes each piece on its
// own). It returns s itself when nothing changes, so that already
// normalized text costs no allocation.
type normalizer interface {
	normalize(s string, sc *scratch) string
}

// unicodeNorm is NFC, NFD, NFKC or NFKD (golang.org/x/text/unicode/norm),
// as the crate's normalizer (unicode-normalization-alignments) does it:
// with the data of Unicode 9.0, so that a character assigned later has
// no decomposition and combining class 0. Normalization is stable across
// versions for the characters both know, so the text is normalized with
// the current tables in the stretches between such characters, which
// stay as they are and bound the stretches.
type unicodeNorm struct{ form norm.Form }

// unicode9 is the characters Unicode 9.0 had assigned.
var unicode9 = rangetable.Assigned("9.0.0")

func (n unicodeNorm) normalize(s string, _ *scratch) string {
	// QuickSpanString is the allocation-free quick check (text normalized
	// under the current tables is normalized under 9.0's too); text it
	// cannot settle is normalized in full.
	if isASCII(s) || n.form.QuickSpanString(s) == len(s) {
		return s
	}
	var b strings.Builder
	start := 0
	for i, r := range s {
		if r >= 0x300 && !unicode.Is(unicode9, r) {
			b.WriteString(n.form.String(s[start:i]))
			b.WriteRune(r)
			start = i + utf8.RuneLen(r)
		}
	}
	if start == 0 {
		return n.form.String(s)
	}
	b.WriteString(n.form.String(s[start:]))
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowercase maps every character as Rust's char::to_lowercase does: the
// simple mapping, except U+0130 (İ), whose full lowercase is "i̇", and
// with the capitals of Unicode 16.0 and 17.0 that Go's 15.0 tables lack.
type lowercase struct{}

func toLower(r rune) rune {
	switch {
	case r < 0x1C89:
		return unicode.ToLower(r)
	case r >= 0x10D50 && r <= 0x10D65: // Garay
		return r + 0x20
	case r >= 0x16EA0 && r <= 0x16EB8: // Beria Erfe
		return r + 0x1B
	}
	switch r {
	case 0x1C89:
		return 0x1C8A
	case 0xA7CB:
		return 0x0264
	case 0xA7CC, 0xA7CE, 0xA7D2, 0xA7D4, 0xA7DA:
		return r + 1
	case 0xA7DC:
		return 0x019B
	}
	return unicode.ToLower(r)
}

func (lowercase) normalize(s string, _ *scratch) string {
	changes := false
	for _, r := range s {
		if r == 0x130 || toLower(r) != r {
			changes = true
			break
		}
	}
	if !changes {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	for _, r := range s {
		if r == 0x130 {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(toLower(r))
	}
	return b.String()
}

// strip removes leading and/or trailing white space (Unicode White_Space).
type strip struct{ left, right bool }

func (n strip) normalize(s string, _ *scratch) string {
	if n.left {
		s = strings.TrimLeftFunc(s, isRustWhitespace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, isRustWhitespace)
	}
	return s
}

// stripAccents removes combining marks (general category M).
type stripAccents struct{}

func (stripAccents) normalize(s string, _ *scratch) string {
	if isASCII(s) || strings.IndexFunc(s, unicode.IsMark) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsMark(r) {
			return -1
		}
		return r
	}, s)
}

// nmt is the Nmt normalizer: drops some control characters and maps some
// separators to a space.
type nmt struct{}

func nmtMap(r rune) rune {
	switch {
	case r >= 0x1 && r <= 0x8, r == 0xB, r >= 0xE && r <= 0x1F, r == 0x7F, r == 0x8F, r == 0x9F:
		return -1
	case r == 0x9, r == 0xA, r == 0xC, r == 0xD, r == 0x1680, r >= 0x200B && r <= 0x200F,
		r == 0x2028, r == 0x2029, r == 0x2581, r == 0xFEFF, r == 0xFFFD:
		return ' '
	}
	return r
}

func (nmt) normalize(s string, _ *scratch) string {
	for _, r := range s {
		if nmtMap(r) != r {
			return strings.Map(nmtMap, s)
		}
	}
	return s
}

// prepend puts a string before a non-empty piece.
type prepend struct{ prefix string }

func (n prepend) normalize(s string, _ *scratch) string {
	if s == "" {
		return s
	}
	return n.prefix + s
}

// replace substitutes content for every match of a literal or a regular
// expression (Oniguruma semantics; see finder).
type replace struct {
	pattern finder
	content string
}

func (n replace) normalize(s string, sc *scratch) string {
	return replaceAll(s, n.pattern, n.content, sc)
}

// replaceAll replaces each match of f in s by content.
func replaceAll(s string, f finder, content string, sc *scratch) string {
	if lit, ok := f.(literalFinder); ok && lit.lit != "" {
		return strings.ReplaceAll(s, lit.lit, content)
	}
	mark := len(sc.ranges)
	sc.ranges = f.find(sc.ranges, s, sc)
	found := sc.ranges[mark:]
	defer func() { sc.ranges = sc.ranges[:mark] }()
	if len(found) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(found)*len(content))
	last := 0
	for _, m := range found {
		b.WriteString(s[last:m[0]])
		b.WriteString(content)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// byteLevelNorm maps every byte to its ByteLevel character.
type byteLevelNorm struct{}

func (byteLevelNorm) normalize(s string, _ *scratch) string {
	if s == "" {
		return s
	}
	return string(appendByteLevel(make([]byte, 0, 2*len(s)), s))
}

// normSequence runs normalizers in order.
type normSequence []normalizer

func (q normSequence) normalize(s string, sc *scratch) string {
	for _, n := range q {
		s = n.normalize(s, sc)
	}
	return s
}
