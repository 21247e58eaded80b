package tokenizer_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// hfCase is one string of the differential suite.
type hfCase struct {
	name string
	text string
	// prefixes asks for a decode of every prefix of the oracle's ids as well
	// (short cases whose prefixes end mid-character).
	prefixes bool
	// big marks the 100k–200k inputs: only encode without special tokens,
	// decode and stream are checked (the other variants take the same path
	// on them, and under -race each costs seconds).
	big bool
}

// The code points Oniguruma's \s matches (Unicode White_Space) and look-alikes
// it does not (tokenizers.md §4).
var (
	whitespaceRunes    = []rune{'\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000}
	notWhitespaceRunes = []rune{0x200b, 0xfeff, 0x180e, 0x1c, 0x1d, 0x1e, 0x1f, 0x200c, 0x200d, 0x2060, 0x0}
)

// targetedCases are the strings of tokenizers.md §10 (1–14), for a model
// whose added tokens are added.
func targetedCases(added []hfAddedToken) []hfCase {
	var cs []hfCase
	add := func(group string, texts ...string) {
		for i, s := range texts {
			cs = append(cs, hfCase{name: fmt.Sprintf("%s/%d", group, i), text: s})
		}
	}
	addPrefixes := func(group string, texts ...string) {
		for i, s := range texts {
			cs = append(cs, hfCase{name: fmt.Sprintf("%s/%d", group, i), text: s, prefixes: true})
		}
	}

	// 1–2. Whitespace runs, leading and trailing spaces.
	add("whitespace", "", " ", "  ", "\n", "\n\n\n", " \n", "  \n  x", "\t\t", "CRLF\r\nline\r\n",
		"a\r\n\r\n b", "\r", "\r\r\n\n", " \r\n ", "x \n\n y", "x\n \n y", "end \n", "end  ", "\n x", "\t\n\tx")
	add("spaces", " leading space", "  two leading", "   three", "trailing   ", "a  b   c    d",
		"tab\tsep", "tabs\t\tand", "a \tb", "a\t b", " ", "  ", "x"+strings.Repeat(" ", 17)+"y")
	for n := 1; n <= 9; n++ {
		add("run", "w"+strings.Repeat(" ", n)+"w", strings.Repeat(" ", n)+"w", "w"+strings.Repeat(" ", n),
			"w"+strings.Repeat("\n", n)+"w", strings.Repeat(" \n", n)+"w")
	}

	// 3. Unicode whitespace and look-alikes, as a␣b and a␣␣b.
	for _, r := range append(append([]rune{}, whitespaceRunes...), notWhitespaceRunes...) {
		s := string(r)
		add(fmt.Sprintf("space-U+%04X", r), "a"+s+"b", "a"+s+s+"b", s+"x", "x"+s, s+s+s, "a "+s+"b", "a"+s+" b", "1"+s+"2", "."+s+"!")
	}
	add("space-mix", "a\u00a0b a\u3000b a\u2009b a\u0085b a\u000bb a\u200bb", "\u3000\u3000日本", "x\u00a0\u00a0\u00a0y")

	// 4. Contractions in all cases.
	var contr []string
	for _, c := range []string{"s", "t", "re", "ve", "m", "ll", "d"} {
		for _, v := range caseVariants(c) {
			contr = append(contr, "it'"+v, "x'"+v+"ab", " '"+v, "'"+v)
		}
	}
	add("contraction", contr...)
	add("contraction-mix", "don't", "I'm", "can't won't shouldn't", "you'RE they'LL", "x'ſab", "x'Kab", "x'S",
		"don’t", " 's", "'s at the start", "''s", "'''", "rock'n'roll", "l'été", "O'Neil's", "1's 2'S", "'\n's")

	// 5. Numbers.
	add("numbers", "1234567890123", "3.14159 x=42", "1,000,000", "٣٤٥ ۱۲۳ १२३", "①②③ ½ ²", "Ⅻ", "12", "123", "1234",
		"12345", "123456", "1234567", "０１２３４５", "๑๒๓", "x1y22z333w4444", "-1e-10", "0x1F", "v1.2.3", "2024-12-01T10:00:00Z")
	for _, n := range []int{31, 32, 100, 1000} {
		add("digits", strings.Repeat("9", n), strings.Repeat("1234567890", n/10+1))
	}

	// 6. Marks and normalization.
	add("marks", "x\u0301\u0302y", " \u0301", "\u0301", "हिन्दी", "e\u0301 cafe\u0301 \u212b A\u030a", "ﬁne ﬂow",
		"ǅ ǈ", "İı", "ß", "Å Å Å", "ñ ñ", "\u1e9b\u0323", "Ω Ω", "ﾊﾝｶｸ", "Ⅻ ⅻ", "a\u0308\u0304", "q\u0307\u0323",
		"\u0915\u093c", "한국어", "\u1112\u1161\u11ab", "\u0627\u0653", "\u05d0\u05b7")

	// 7. Scripts (Vietnamese in NFC and NFD).
	add("scripts", "你好，世界！", "こんにちは世界", "カタカナとひらがな", "한국어", "mixed русский English 中文 العربية",
		"ελληνικά", "𮯰.", "x𮯰!?", "𠀀𠀁", "ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรค", "สวัสดีครับ",
		"مرحبا بالعالم", "اَلْعَرَبِيَّة", "\u200fשלום\u200e", "Tiếng Việt", "Tie\u0302\u0301ng Vie\u0323\u0302t",
		" Việt", " Vie\u0323\u0302t", "Xin chào thế giới", "Xin cha\u0300o the\u0302\u0301 gio\u031b\u0301i",
		"日本語のテキスト、句読点。", "中文，标点；“引号”", "Ünïcödé", "ქართული", "Հայերեն", "ᚠᚢᚦ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
		"\U0010fffd", "x\U0010fffdy", "\ue000\uf8ff", "\ufffe\uffff", "\U0001d11e", "\U00010d40")

	// 8. Emoji, with every prefix decoded.
	addPrefixes("emoji", "😀", "👍🏽", " 👨‍👩‍👧", "🇯🇵", "1️⃣", "#️⃣", "🏳️‍🌈", "❤️", "家族 👨‍👩‍👧 ok", "🇺🇸🇬🇧", "👩🏾‍💻",
		"é", "中", "Việt", "a\u0301", "\U0010fffd")

	// 9. Special-token text inside ordinary text, partial markers, other families' markers.
	add("special", "<|im_start|>user\nhi<|im_end|>", "<<|im_start|>>", "<|im_start|><|im_start|>", "<|im_", "<|im_end",
		"<think>\nreason\n</think>\n\nanswer", "user\n<think>\nHello\n</think>", "<|begin_of_text|>",
		"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", "<|eot_id|",
		"<｜User｜>hi<｜Assistant｜>", "<｜User", "<start_of_turn>user\nhi<end_of_turn>\n", "<start_of_", "<bos><eos>",
		"x<|im_end|>y", " <|im_end|> ", "<|endoftext|><|endoftext|>", "<tool_call>{\"a\":1}</tool_call>", "<|", "|>", "<>")
	for i, a := range added {
		if i >= 64 && i%97 != 0 { // all of the first 64, then a sample (Gemma has 6,415)
			continue
		}
		c := a.Content
		add("added", c, "x"+c+"y", " "+c+" ", c+c, "\n"+c+"\n", firstHalf(c), "<"+c+">")
	}

	// 10. Model flags: Gemma's byte fallback and long single-word BPE.
	add("flags", "\U0010fffd", "\U000e0001", "\U0001fae8", strings.Repeat("ab", 2048), englishParagraph(4096))

	// 14. Code and indentation.
	add("code", "def f(x):\n    return x**2\n\n\n\nprint(f(3))", "func main() {\n\treturn 0\n}\n",
		"if x:\n    if y:\n        z = 1\n    else:\n        z = 2\n",
		"        deep = True\n                deeper = [1, 2, 3]\n",
		"class A {\n    public static void main(String[] args) {\n        System.out.println(\"hi\");\n    }\n}\n",
		"SELECT * FROM t WHERE a >= 10 AND b <> 'x';", "x := map[string]int{\"a\": 1}\n", "<div class=\"x\">&amp;</div>",
		"#!/bin/sh\nset -eu\necho \"$HOME\" | tr a-z A-Z\n", "// comment\n/* block */\n", "a->b::c<<d>>e ^= ~f",
		"{\"key\": [1, 2.5, null, true], \"k2\": {\"n\": \"v\"}}", "$$\\frac{1}{2}\\sum_{i=0}^{n} x_i^2$$")

	// A 50 KB input (tokenizers.md §10.15 pools, seeded).
	cs = append(cs, hfCase{name: "long/50KB", text: longMixedText(50 << 10)})
	return cs
}

// pathologicalCases are the 200k inputs of tokenizers.md §10.13.
func pathologicalCases() []hfCase {
	return []hfCase{
		{name: "pathological/200k-spaces", text: strings.Repeat(" ", 200000), big: true},
		{name: "pathological/200k-newlines", text: strings.Repeat("\n", 200000), big: true},
		{name: "pathological/200k-carets", text: strings.Repeat("^", 200000), big: true},
		{name: "pathological/200k-digits", text: strings.Repeat("7", 200000), big: true},
		{name: "pathological/100k-a", text: strings.Repeat("a", 100000), big: true},
		{name: "pathological/50k-space-tab", text: strings.Repeat(" \t", 50000) + "y", big: true},
	}
}

// firstHalf is the first half of s's characters: a partial marker.
func firstHalf(s string) string {
	r := []rune(s)
	return string(r[:len(r)/2])
}

// caseVariants returns every upper/lower-case spelling of an ASCII word.
func caseVariants(w string) []string {
	out := []string{""}
	for _, c := range w {
		var next []string
		for _, p := range out {
			next = append(next, p+strings.ToLower(string(c)), p+strings.ToUpper(string(c)))
		}
		out = next
	}
	return out
}

// englishParagraph is about n bytes of prose without newlines.
func englishParagraph(n int) string {
	r := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(englishWords[r.IntN(len(englishWords))])
		if r.IntN(9) == 0 {
			b.WriteString(",")
		}
		b.WriteString(" ")
	}
	return b.String()
}

// longMixedText is about n bytes of seeded random fragments of every pool.
func longMixedText(n int) string {
	g := newStringGen(50, nil)
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(g.next())
		b.WriteString(g.pick(separators))
	}
	return b.String()
}
