package splitfast

import (
	"math/rand/v2"
	"strings"
	"unicode"
)

// A pool is a family of short strings ("atoms") that random inputs are
// assembled from, with a weight.
type pool struct {
	weight int
	atoms  []string
}

// newAtoms are letters and numbers of Unicode 15.1 and 16.0, their
// unassigned neighbours, and Unicode 17.0 letters (unassigned for both
// engines); only the patched reference covers the first.
var newAtoms = []string{
	"\U0002EBF0", "\U0002ED00", "\U0002EE5D", "\U0002EBEF", "\U0002EE5E", "\u1c89", "\u1c8a", "\ua7cb",
	"\ua7dc", "\U00013460", "\U000143FA", "\U000143FB", "\U00010D40", "\U00010D4A", "\U0001CCF0",
	"\U00016D70", "\U00016D40", "\U0001E5F0", "\U0001E5F1", "\U000323B0", "\U00016EA0",
}

var pools = func() []pool {
	var spaces []string
	for _, r := range whitespaceCodePoints() {
		spaces = append(spaces, string(r))
	}
	var c1 []string
	for r := rune(0x80); r < 0xA0; r++ {
		c1 = append(c1, string(r))
	}
	return []pool{
		{12, strings.Fields("the a hello x don I we they you it world foo bar_baz Hello THE ok")},
		{3, strings.Fields("A RE LL VE HELLO X ǅ İ ı é ß ǈ Ω")},
		{6, strings.Fields("s t re ve m ll d S T RE VE M LL D ſ \u212a k e l r v rE Ll")},
		{6, strings.Fields("0 1 7 9 12 123 2024 99999 3.14")},
		{10, strings.Fields(". , ! ? ' ' ' \" ( ) - _ # $ / \\ : ; * ** = <| |> ~ ` @ ^ {} [ ] % & + ...")},
		{12, []string{" ", " ", " ", "  ", "\n", "\n", "\n\n", "\t", "\r", "\r\n", " \n", "\t\t", "    "}},
		{4, spaces},
		{2, []string{"\u200b", "\ufeff", "\u180e", "\x1c", "\x1d", "\x1e", "\x1f", "\u00ad", "\u2060"}},
		{4, []string{"\u0301", "\u0302", "\u0308", "\u093f", "\u094d", "\u0e31", "\u20e3", "\ufe0f", "\u200d", "\U0001f3fd"}},
		{6, strings.Fields("ж Привет λ ελληνικά ب مرحبا ש शब्द ह न ไทย 你 好 世界 こ カ 한국어 𝐀 𠀀 ǅ")},
		{4, strings.Fields("٣ ۱۲ १ ① ½ ² Ⅻ 𝟎 〇 ፩ ٣٤٥")},
		{5, strings.Fields("😀 👍 👨\u200d👩\u200d👧 🇯🇵 1️⃣ € © → \ufffd 。 ， ！ 「 」 ⿼ \u31ef")},
		{2, append([]string{"\x00", "\x07", "\x1b", "\x7f"}, c1...)},
		{2, []string{"\xff", "\x80", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xf0\x9f", "\xc0\x80", "\xf4\x90\x80\x80"}},
	}
}()

// randomString assembles up to 24 atoms from the pools. Now and then it
// favours whitespace or inserts a random code point; with unicode16 it may
// use newAtoms.
func randomString(rng *rand.Rand, unicode16 bool) string {
	total := 0
	for _, p := range pools {
		total += p.weight
	}
	spacey := rng.IntN(8) == 0
	var b strings.Builder
	for n := rng.IntN(25); n > 0; n-- {
		switch k := rng.IntN(100); {
		case k == 0:
			b.WriteRune(randomRune(rng, unicode16))
			continue
		case k == 1 && unicode16:
			b.WriteString(newAtoms[rng.IntN(len(newAtoms))])
			continue
		case spacey && k < 50:
			p := pools[5+rng.IntN(2)]
			b.WriteString(p.atoms[rng.IntN(len(p.atoms))])
			continue
		}
		w := rng.IntN(total)
		for _, p := range pools {
			if w < p.weight {
				b.WriteString(p.atoms[rng.IntN(len(p.atoms))])
				break
			}
			w -= p.weight
		}
	}
	return b.String()
}

// randomRune returns a random valid code point, outside the additions of
// Unicode 15.1 and 16.0 unless unicode16.
func randomRune(rng *rand.Rand, unicode16 bool) rune {
	for {
		var r rune
		if rng.IntN(2) == 0 {
			r = rune(rng.IntN(0x10000))
		} else {
			r = rune(rng.IntN(unicode.MaxRune + 1))
		}
		if (r < 0xD800 || r > 0xDFFF) && (unicode16 || !unicode.Is(onigLetters, r) && !unicode.Is(onigNumbers, r)) {
			return r
		}
	}
}
