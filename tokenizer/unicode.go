package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Character classes as Rust defines them, where Hugging Face's code uses
// Rust's definitions rather than Oniguruma's.

// isRustWhitespace is Rust's char::is_whitespace and the regex crate's \s:
// the Unicode White_Space property. Go's unicode.IsSpace is the same set.
func isRustWhitespace(r rune) bool { return unicode.IsSpace(r) }

// isRustWord is the regex crate's Unicode \w: Alphabetic, marks, decimal
// digits, connector punctuation and the joiners U+200C, U+200D.
func isRustWord(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
	}
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) ||
		unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) ||
		r == 0x200C || r == 0x200D
}

// isRustNumeric is Rust's char::is_numeric: general categories Nd, Nl, No.
func isRustNumeric(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r)
}

// isPunctuation is the Punctuation pre-tokenizer's test: ASCII punctuation
// (which includes symbols such as '$' and '+') or a Unicode P* category.
func isPunctuation(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '!' && r <= '/' || r >= ':' && r <= '@' || r >= '[' && r <= '`' || r >= '{' && r <= '~'
	}
	return unicode.IsPunct(r)
}

// validUTF8 returns s with every maximal invalid subsequence replaced by
// U+FFFD, as Rust's String::from_utf8_lossy does (the Unicode "maximal
// subpart" practice: a truncated sequence gives one U+FFFD, each other
// invalid byte one). s itself is returned when it is valid.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(appendLossy(make([]byte, 0, len(s)+8), s))
}

// appendLossy appends the lossy decoding of the bytes of s (see validUTF8).
func appendLossy[T string | []byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		n := validPrefix(s[i:])
		if n > 0 && n == seqLen(c) {
			dst = append(dst, s[i:i+n]...)
			i += n
			continue
		}
		dst = append(dst, "\uFFFD"...)
		i += max(n, 1)
	}
	return dst
}

// seqLen is the length of the UTF-8 sequence a lead byte starts (0 when c
// cannot start one).
func seqLen(c byte) int {
	switch {
	case c < 0x80:
		return 1
	case c >= 0xC2 && c <= 0xDF:
		return 2
	case c >= 0xE0 && c <= 0xEF:
		return 3
	case c >= 0xF0 && c <= 0xF4:
		return 4
	}
	return 0
}

// validPrefix returns how many bytes at the start of s form a valid
// (possibly incomplete) prefix of one UTF-8 sequence, following the
// continuation-byte ranges of the Unicode table 3-7 (so "\xE0\x80" has a
// valid prefix of 1, "\xED\xA0" of 1).
func validPrefix[T string | []byte](s T) int {
	if len(s) == 0 {
		return 0
	}
	c := s[0]
	n := seqLen(c)
	if n == 0 {
		return 0
	}
	if n == 1 {
		return 1
	}
	lo, hi := byte(0x80), byte(0xBF)
	switch c {
	case 0xE0:
		lo = 0xA0
	case 0xED:
		hi = 0x9F
	case 0xF0:
		lo = 0x90
	case 0xF4:
		hi = 0x8F
	}
	k := 1
	for k < n && k < len(s) {
		b := s[k]
		if b < lo || b > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		k++
	}
	return k
}
