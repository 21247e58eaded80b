package splitfast

import (
	"unicode"
	"unicode/utf8"
)

// class is what the patterns can tell apart about a character. The four
// classes are disjoint: White_Space characters are controls or separators,
// never letters or numbers.
type class uint8

const (
	other  class = iota // [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls, unassigned, invalid UTF-8
	letter              // \p{L}
	number              // \p{N}
	space               // \s

	// multi marks, in asciiClass, a byte that starts a multi-byte sequence
	// (or is invalid): the character must be decoded.
	multi
)

// Oniguruma's tables in Hugging Face tokenizers are Unicode 16.0; Go's are
// 15.0. The letters and numbers that Unicode 15.1 and 16.0 added are
// unassigned for Go and must be added to \p{L} and \p{N}. The ranges were
// read off Hugging Face tokenizers 0.23.2 by classifying every code point
// with its pre-tokenizer; nothing else differs (no White_Space changes, no
// character changed class). Unicode 17.0 additions are in neither.
var (
	onigLetters = &unicode.RangeTable{
		R16: []unicode.Range16{
			{Lo: 0x1C89, Hi: 0x1C8A, Stride: 1}, // Cyrillic Tje
			{Lo: 0xA7CB, Hi: 0xA7CD, Stride: 1}, // Latin Extended-D
			{Lo: 0xA7DA, Hi: 0xA7DC, Stride: 1},
		},
		R32: []unicode.Range32{
			{Lo: 0x105C0, Hi: 0x105F3, Stride: 1}, // Todhri
			{Lo: 0x10D4A, Hi: 0x10D65, Stride: 1}, // Garay
			{Lo: 0x10D6F, Hi: 0x10D85, Stride: 1},
			{Lo: 0x10EC2, Hi: 0x10EC4, Stride: 1}, // Arabic Extended-C
			{Lo: 0x11380, Hi: 0x11389, Stride: 1}, // Tulu-Tigalari
			{Lo: 0x1138B, Hi: 0x1138B, Stride: 1},
			{Lo: 0x1138E, Hi: 0x1138E, Stride: 1},
			{Lo: 0x11390, Hi: 0x113B5, Stride: 1},
			{Lo: 0x113B7, Hi: 0x113B7, Stride: 1},
			{Lo: 0x113D1, Hi: 0x113D1, Stride: 1},
			{Lo: 0x113D3, Hi: 0x113D3, Stride: 1},
			{Lo: 0x11BC0, Hi: 0x11BE0, Stride: 1}, // Sunuwar
			{Lo: 0x13460, Hi: 0x143FA, Stride: 1}, // Egyptian Hieroglyphs Extended-A
			{Lo: 0x16100, Hi: 0x1611D, Stride: 1}, // Gurung Khema
			{Lo: 0x16D40, Hi: 0x16D6C, Stride: 1}, // Kirat Rai
			{Lo: 0x18CFF, Hi: 0x18CFF, Stride: 1}, // Khitan Small Script
			{Lo: 0x1E5D0, Hi: 0x1E5ED, Stride: 1}, // Ol Onal
			{Lo: 0x1E5F0, Hi: 0x1E5F0, Stride: 1},
			{Lo: 0x2EBF0, Hi: 0x2EE5D, Stride: 1}, // CJK Unified Ideographs Extension I (15.1)
		},
	}
	onigNumbers = &unicode.RangeTable{
		R32: []unicode.Range32{
			{Lo: 0x10D40, Hi: 0x10D49, Stride: 1}, // Garay digits
			{Lo: 0x116D0, Hi: 0x116E3, Stride: 1}, // Myanmar Extended-C digits
			{Lo: 0x11BF0, Hi: 0x11BF9, Stride: 1}, // Sunuwar digits
			{Lo: 0x16130, Hi: 0x16139, Stride: 1}, // Gurung Khema digits
			{Lo: 0x16D70, Hi: 0x16D79, Stride: 1}, // Kirat Rai digits
			{Lo: 0x1CCF0, Hi: 0x1CCF9, Stride: 1}, // outlined digits
			{Lo: 0x1E5F1, Hi: 0x1E5FA, Stride: 1}, // Ol Onal digits
		},
	}
)

// asciiClass holds the class of every ASCII byte and multi for the others.
var asciiClass = func() (t [256]class) {
	for b := range t {
		if b < utf8.RuneSelf {
			t[b] = classOfRune(rune(b))
		} else {
			t[b] = multi
		}
	}
	return t
}()

// bmpClass packs the class of every rune below U+10000, two bits each,
// filled from the same tables as classOfRune.
var bmpClass = func() (t [1 << 16 / 4]uint8) {
	set := func(tab *unicode.RangeTable, c class) {
		for _, r := range tab.R16 {
			for x := uint32(r.Lo); x <= uint32(r.Hi); x += uint32(r.Stride) {
				t[x>>2] |= uint8(c) << (2 * (x & 3))
			}
		}
	}
	set(unicode.L, letter)
	set(onigLetters, letter)
	set(unicode.N, number)
	set(onigNumbers, number)
	set(unicode.White_Space, space)
	return t
}()

// classOfRune is the definition the tables are built from and checked
// against.
func classOfRune(r rune) class {
	switch {
	case unicode.IsSpace(r):
		return space
	case unicode.IsLetter(r), unicode.Is(onigLetters, r):
		return letter
	case unicode.IsNumber(r), unicode.Is(onigNumbers, r):
		return number
	}
	return other
}

// classAt returns the class of the character at s[i] (i < len(s)) and its
// length in bytes; an invalid byte is one character of class other.
func classAt(s string, i int) (class, int) {
	if c := asciiClass[s[i]]; c != multi {
		return c, 1
	}
	return decodeClass(s[i:])
}

// decodeClass returns the class and length of the non-ASCII character (or
// invalid byte) that s starts with.
func decodeClass(s string) (class, int) {
	r, n := utf8.DecodeRuneInString(s)
	return classOfMulti(r), n
}

// classOfMulti classifies a decoded non-ASCII rune (utf8.RuneError for an
// invalid byte, which is in class other like the real U+FFFD).
func classOfMulti(r rune) class {
	if r < 1<<16 {
		return class(bmpClass[r>>2]>>(2*(r&3))) & 3
	}
	switch {
	case unicode.IsLetter(r), unicode.Is(onigLetters, r):
		return letter
	case unicode.IsNumber(r), unicode.Is(onigNumbers, r):
		return number
	}
	return other // no White_Space outside the BMP
}

// runEnd returns the end of the run of characters of class want that
// starts at i. The ASCII loop is small enough to inline.
func runEnd(s string, i int, want class) int {
	for i < len(s) {
		c := asciiClass[s[i]]
		if c == want {
			i++
			continue
		}
		if c == multi {
			return runEndMulti(s, i, want)
		}
		break
	}
	return i
}

// runEndMulti is runEnd from a non-ASCII byte on.
func runEndMulti(s string, i int, want class) int {
	for i < len(s) {
		c := asciiClass[s[i]]
		if c == want {
			i++
			continue
		}
		if c != multi {
			return i
		}
		c, n := decodeClass(s[i:])
		if c != want {
			return i
		}
		i += n
	}
	return i
}

// spaceRun describes the run of whitespace W that starts at i (s[i] is a
// space): its end, the start of its last character, and the index of its
// last '\r' or '\n' (-1 if none).
func spaceRun(s string, i int) (end, last, lastBreak int) {
	lastBreak = -1
	for i < len(s) {
		c, n := classAt(s, i)
		if c != space {
			break
		}
		if b := s[i]; b == '\r' || b == '\n' {
			lastBreak = i
		}
		last = i
		i += n
	}
	return i, last, lastBreak
}

// breakRunEnd returns the end of the run of '\r' and '\n' that starts at i.
func breakRunEnd(s string, i int) int {
	for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}
