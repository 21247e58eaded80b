package tokenizer_test

import (
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Sweeps walk whole Unicode tables, where Hugging Face's and Go's Unicode
// versions can disagree: the normalization tables (HF's NFC comes from the
// unicode-normalization-alignments crate) and the character classes of the
// split patterns (Oniguruma's against Go's unicode package). They are
// encoded in batches (encode, and decode of HF's ids).

// sweepPacker packs per-code-point snippets, hfSweepPack to a string, into
// cases named by their first and last code point.
type sweepPacker struct {
	kind        string
	cs          []hfCase
	b           strings.Builder
	n           int
	first, last rune
}

const hfSweepPack = 32

func (p *sweepPacker) add(c rune, snippet string) {
	if p.n == 0 {
		p.first = c
	}
	p.b.WriteString(snippet)
	p.last = c
	if p.n++; p.n == hfSweepPack {
		p.flush()
	}
}

func (p *sweepPacker) flush() {
	if p.n > 0 {
		p.cs = append(p.cs, hfCase{name: fmt.Sprintf("sweep/%s U+%04X–U+%04X", p.kind, p.first, p.last), text: p.b.String()})
		p.b.Reset()
		p.n = 0
	}
}

// normalizationSweep has, for every code point with a non-zero canonical
// combining class, a snippet where canonical ordering must move it (after
// U+0300, class 230, when its class is lower; before U+0334, class 1,
// otherwise), and every code point with a canonical decomposition, alone
// and decomposed. Classes and decompositions are Go's (x/text, Unicode
// 15.0); HF's answer is the reference.
func normalizationSweep() []hfCase {
	marks := &sweepPacker{kind: "combining-class"}
	decomp := &sweepPacker{kind: "decomposition"}
	for c := rune(0); c <= utf8.MaxRune; c++ {
		if !utf8.ValidRune(c) {
			continue
		}
		s := string(c)
		if ccc := norm.NFC.PropertiesString(s).CCC(); ccc != 0 {
			if ccc < 230 {
				marks.add(c, "x\u0300"+s+"\n")
			} else {
				marks.add(c, "x"+s+"\u0334\n")
			}
		}
		if d := norm.NFD.String(s); d != s {
			decomp.add(c, s+" "+d+"\n")
		}
	}
	marks.flush()
	decomp.flush()
	return append(marks.cs, decomp.cs...)
}

// codePointSweep has code points in a snippet that tells the split
// patterns' classes apart (\p{L}, \p{N}, \s, the rest: a space before it, a
// letter, a digit and a contraction after it). By default: ASCII, every
// code point within 2 of a change of Go's class (where a newer or older
// Unicode version moves the boundary), and every 32nd; with
// TANDEM_HF_SWEEP=full, every code point.
func codePointSweep() []hfCase {
	full := os.Getenv("TANDEM_HF_SWEEP") == "full"
	p := &sweepPacker{kind: "code-points"}
	for c := rune(0); c <= utf8.MaxRune; c++ {
		if !utf8.ValidRune(c) {
			continue
		}
		near := false
		for d := rune(-1); d <= 2 && !near; d++ {
			near = c+d > 0 && c+d <= utf8.MaxRune && goClass(c+d) != goClass(c+d-1)
		}
		if full || c < 0x80 || c%32 == 0 || near {
			s := string(c)
			p.add(c, " "+s+"a"+s+"1"+s+"'s\n")
		}
	}
	p.flush()
	return p.cs
}

// goClass is the class of c the split patterns care about, by Go's tables.
func goClass(c rune) int {
	switch {
	case unicode.IsLetter(c):
		return 1
	case unicode.IsNumber(c):
		return 2
	case unicode.IsSpace(c):
		return 3
	case unicode.IsMark(c):
		return 4
	case unicode.IsPunct(c):
		return 5
	case unicode.IsSymbol(c):
		return 6
	case unicode.In(c, unicode.Cc, unicode.Cf, unicode.Co):
		return 7
	}
	return 0 // unassigned (or a surrogate)
}
