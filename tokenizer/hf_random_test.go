package tokenizer_test

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// stringGen draws seeded random strings from pools of everything
// tokenizers.md §10 lists (§10.15): the same seed gives the same strings on
// every machine. Every string is valid UTF-8 with no surrogates, so it
// crosses into JavaScript (UTF-16) unchanged.
type stringGen struct {
	r       *rand.Rand
	markers []string // added-token text of the model under test and of other families
}

func newStringGen(seed uint64, added []hfAddedToken) *stringGen {
	markers := append([]string{}, familyMarkers...)
	for i, a := range added {
		if i < 200 || i%53 == 0 { // Gemma has 6,415 added tokens: a sample
			markers = append(markers, a.Content)
		}
	}
	return &stringGen{r: rand.New(rand.NewPCG(seed, 0x7a6e_6465_6d)), markers: markers}
}

var (
	englishWords = []string{"the", "of", "and", "to", "in", "is", "that", "light", "Newton", "colour", "prism",
		"refraction", "experiment", "I", "it", "was", "which", "rays", "THE", "Hello", "world", "quick", "brown",
		"fox", "jumps", "over", "lazy", "dog", "tokenizer", "Hugging", "Face", "model", "learning", "gradient",
		"reward", "policy", "Go", "JSON", "API", "a", "an", "be", "not", "with", "as", "you", "for", "on", "are",
		"internationalization", "supercalifragilistic", "don", "won", "ok", "OK", "Mr", "e.g", "i.e"}
	familyMarkers = []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
		"</tool_call>", "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
		"<|end_of_text|>", "<｜User｜>", "<｜Assistant｜>", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>",
		"<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<pad>", "<unk>", "<|im_", "<|", "|>", "<｜", "｜>",
		"<start_of", "</", "<|eot", "▁", "▁▁", "<0x41>", "<unused0>"}
	contractionTails = []string{"s", "t", "re", "ve", "m", "ll", "d", "S", "T", "RE", "Re", "rE", "VE", "M",
		"LL", "lL", "D", "ſ", "K", "x"}
	apostrophes = []string{"'", "’", "‘", "`", "''"}
	digitSets   = []string{"0123456789", "٠١٢٣٤٥٦٧٨٩", "۰۱۲۳۴۵۶۷۸۹", "०१२३४५६७८९", "０１２３４５６７８９", "๐๑๒๓๔๕๖๗๘๙",
		"①②③④⑤½¼¾²³¹", "ⅠⅡⅢⅣⅫⅰⅱ〇"}
	scriptWords = []string{"你好", "世界", "中文", "标点", "こんにちは", "ありがとう", "カタカナ", "한국어", "안녕하세요",
		"русский", "Привет", "ελληνικά", "Καλημέρα", "العربية", "مرحبا", "اَلسَّلَامُ", "שלום", "हिन्दी", "नमस्ते",
		"ภาษาไทย", "สวัสดีครับ", "ขอบคุณ", "Tiếng", "Việt", "người", "Nguyễn", "đường", "Tie\u0302\u0301ng",
		"Vie\u0323\u0302t", "ngu\u031b\u0300o\u031b\u0300i", "Nguye\u0302\u0303n", "ქართული", "Հայերեն", "தமிழ்",
		"বাংলা", "ગુજરાતી", "ᐃᓄᒃᑎᑐᑦ", "ትግርኛ", "Ünïcödé", "façade", "naïve", "Straße", "İstanbul", "ǅemal"}
	emojiPool = []string{"😀", "👍", "👍🏽", "👨‍👩‍👧", "👩🏾‍💻", "🇯🇵", "🇺🇸", "🏳️‍🌈", "1️⃣", "#️⃣", "*️⃣", "❤️", "❤",
		"✨", "🔥", "🤖", "🧑‍🤝‍🧑", "👋🏻", "🫨", "☺️", "⌚", "🀄"}
	codePool = []string{"def f(x):", "return x**2", "func main() {", "}", "\treturn 0", "if (a && b) {", "x += 1;",
		"print(f(3))", "#include <stdio.h>", "fn main() -> Result<(), E>", "SELECT * FROM t;", "<div>", "</div>",
		"&amp;", "a->b", "::", "=>", "!==", "//", "/*", "*/", "#", "@decorator", "$var", "%s", "{{", "}}", "[0]",
		"\n    ", "\n        ", "\n\t", "\n\t\t", "    ", "        ", "\n\n\n\n", "\r\n"}
	punctPool = []string{".", ",", "!", "?", ";", ":", "...", "…", "—", "–", "-", "«", "»", "¿", "¡", "“", "”",
		"\"", "(", ")", "[", "]", "{", "}", "^", "^^^", "~", "|", "\\", "/", "@", "#", "$", "%", "&", "*", "+",
		"=", "<", ">", "€", "£", "¥", "©", "®", "™", "°", "±", "×", "÷", "→", "⇒", "∀", "∑", "√", "∞", "≈", "≠",
		"≤", "≥", "。", "、", "，", "！", "？", "：", "；", "「", "」"}
	separators = []string{"", " ", " ", " ", "  ", "\n", "\n\n", "\t", " \n", "\r\n", "\u00a0", "\u3000"}
)

// scalarRanges are where random code points come from, with weights.
var scalarRanges = []struct {
	lo, hi rune
	weight int
}{
	{0x20, 0x7e, 30}, {0x00, 0x1f, 2}, {0x7f, 0x9f, 1}, {0xa0, 0x24f, 6}, {0x250, 0x36f, 3},
	{0x370, 0x52f, 3}, {0x530, 0x10ff, 4}, {0x1100, 0x1fff, 3}, {0x2000, 0x2bff, 5}, {0x2e80, 0x33ff, 3},
	{0x3400, 0x9fff, 5}, {0xa000, 0xd7ff, 3}, {0xe000, 0xf8ff, 1}, {0xf900, 0xfffd, 3}, {0xfffe, 0xffff, 1},
	{0x10000, 0x1ffff, 4}, {0x20000, 0x2ffff, 2}, {0x2ebf0, 0x2ee5d, 1}, {0x30000, 0x3134f, 1},
	{0xe0000, 0xe01ef, 1}, {0xf0000, 0x10ffff, 1},
}

func (g *stringGen) pick(pool []string) string { return pool[g.r.IntN(len(pool))] }

// denseAlphabet is a few characters of every class the split patterns tell
// apart (letters, digits, marks, apostrophes, punctuation, each kind of
// whitespace, CJK), for short strings that hit the splitter's corners.
var denseAlphabet = []string{" ", " ", " ", "\t", "\n", "\n", "\r", "\u00a0", "\u3000", "\u2009", "\u200b", "a", "B",
	"s", "t", "1", "2", "٣", ".", "!", "'", "'", "’", "é", "\u0301", "中", "ſ", "K", "<", "|", ">", "_"}

// next returns one random string: a few fragments (sometimes many), each
// from a random pool, with random separators; or, one time in four, a short
// string over denseAlphabet.
func (g *stringGen) next() string {
	if g.r.IntN(4) == 0 {
		var b strings.Builder
		for k := 1 + g.r.IntN(16); k > 0; k-- {
			b.WriteString(g.pick(denseAlphabet))
		}
		return b.String()
	}
	n := 1 + g.r.IntN(8)
	switch g.r.IntN(20) {
	case 0:
		n = 40 + g.r.IntN(160)
	case 1, 2:
		n = 1
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(g.pick(separators))
		}
		g.fragment(&b)
	}
	return b.String()
}

func (g *stringGen) fragment(b *strings.Builder) {
	r := g.r
	switch r.IntN(14) {
	case 0, 1:
		w := g.pick(englishWords)
		switch r.IntN(6) {
		case 0:
			w = strings.ToUpper(w)
		case 1:
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
	case 2: // whitespace runs, Unicode White_Space and look-alikes
		for k := 1 + r.IntN(6); k > 0; k-- {
			if r.IntN(4) == 0 {
				b.WriteRune(notWhitespaceRunes[r.IntN(len(notWhitespaceRunes))])
			} else if r.IntN(2) == 0 {
				b.WriteString(" ")
			} else {
				b.WriteRune(whitespaceRunes[r.IntN(len(whitespaceRunes))])
			}
		}
	case 3: // contractions
		b.WriteString(g.pick(apostrophes))
		b.WriteString(g.pick(contractionTails))
		if r.IntN(2) == 0 {
			b.WriteString(g.pick(englishWords))
		}
	case 4: // numbers in every script, long digit runs
		set := []rune(g.pick(digitSets))
		k := 1 + r.IntN(6)
		if r.IntN(5) == 0 {
			k = 10 + r.IntN(60)
		}
		for ; k > 0; k-- {
			b.WriteRune(set[r.IntN(len(set))])
		}
	case 5: // combining marks on a letter (NFC-sensitive)
		b.WriteString(g.pick([]string{"a", "e", "o", "u", "A", "n", "c", " ", "x", "ạ", "ơ", "क"}))
		for k := 1 + r.IntN(3); k > 0; k-- {
			b.WriteRune(g.pick1([]rune{0x300, 0x301, 0x302, 0x303, 0x308, 0x30a, 0x31b, 0x323, 0x327, 0x328, 0x93c, 0x94d, 0x670, 0x5b7, 0x20d7}))
		}
	case 6: // CJK, kana, Hangul (precomposed and jamo)
		lo, hi := g.pickRange([][2]rune{{0x4e00, 0x9fff}, {0x3040, 0x309f}, {0x30a0, 0x30ff}, {0xac00, 0xd7a3}, {0x1100, 0x11ff}, {0x20000, 0x2a6df}, {0x2ebf0, 0x2ee5d}})
		for k := 1 + r.IntN(8); k > 0; k-- {
			b.WriteRune(lo + rune(r.IntN(int(hi-lo+1))))
		}
	case 7:
		b.WriteString(g.pick(scriptWords))
	case 8: // emoji: sequences, skin tones, flags, keycaps, random pictographs
		switch r.IntN(4) {
		case 0:
			b.WriteRune(0x1f300 + rune(r.IntN(0x1faff-0x1f300)))
			if r.IntN(2) == 0 {
				b.WriteRune(0x1f3fb + rune(r.IntN(5)))
			}
		case 1:
			b.WriteRune(0x1f1e6 + rune(r.IntN(26)))
			b.WriteRune(0x1f1e6 + rune(r.IntN(26)))
		default:
			b.WriteString(g.pick(emojiPool))
			if r.IntN(3) == 0 {
				b.WriteString("\u200d")
				b.WriteString(g.pick(emojiPool))
			}
		}
	case 9: // special-token text, whole and partial
		m := g.pick(g.markers)
		if r.IntN(4) == 0 {
			rs := []rune(m)
			m = string(rs[:r.IntN(len(rs)+1)])
		}
		b.WriteString(m)
	case 10:
		b.WriteString(g.pick(codePool))
	case 11:
		for k := 1 + r.IntN(3); k > 0; k-- {
			b.WriteString(g.pick(punctPool))
		}
	default: // random scalar values
		for k := 1 + r.IntN(6); k > 0; k-- {
			b.WriteRune(g.scalar())
		}
	}
}

func (g *stringGen) pick1(pool []rune) rune { return pool[g.r.IntN(len(pool))] }

func (g *stringGen) pickRange(rs [][2]rune) (rune, rune) {
	x := rs[g.r.IntN(len(rs))]
	return x[0], x[1]
}

// scalar is a random Unicode scalar value (never a surrogate).
func (g *stringGen) scalar() rune {
	total := 0
	for _, s := range scalarRanges {
		total += s.weight
	}
	w := g.r.IntN(total)
	for _, s := range scalarRanges {
		if w < s.weight {
			c := s.lo + rune(g.r.IntN(int(s.hi-s.lo+1)))
			if !utf8.ValidRune(c) {
				return 0xfffd
			}
			return c
		}
		w -= s.weight
	}
	return 'x'
}

var byteFallbackToken = regexp.MustCompile(`^<0x[0-9A-F]{2}>$`)

// randomIDSeqs draws n id sequences from the valid ids: mostly any token,
// some added tokens, some single-byte tokens (whose runs are often invalid
// UTF-8).
func randomIDSeqs(seed uint64, vocab map[string]int, added []hfAddedToken, n int) [][]int {
	var all, byteIDs []int
	for tok, id := range vocab {
		all = append(all, id)
		if byteFallbackToken.MatchString(tok) {
			byteIDs = append(byteIDs, id)
		}
	}
	if len(byteIDs) == 0 { // byte-level BPE: the 256 one-character tokens
		for tok, id := range vocab {
			if utf8.RuneCountInString(tok) == 1 {
				byteIDs = append(byteIDs, id)
			}
		}
	}
	slices.Sort(all)
	slices.Sort(byteIDs)
	r := rand.New(rand.NewPCG(seed, 2))
	seqs := make([][]int, n)
	for i := range seqs {
		ids := make([]int, 1+r.IntN(48))
		for j := range ids {
			switch k := r.IntN(10); {
			case k < 7 || len(byteIDs) == 0:
				ids[j] = all[r.IntN(len(all))]
			case k < 9:
				ids[j] = byteIDs[r.IntN(len(byteIDs))]
			default:
				ids[j] = added[r.IntN(len(added))].ID
			}
		}
		seqs[i] = ids
	}
	return seqs
}
