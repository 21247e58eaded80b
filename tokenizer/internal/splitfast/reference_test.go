package splitfast

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// A known pattern, its Matcher and two regexp2 (default mode) references:
// exact compiles the pattern as it is; patched adds the letters and numbers
// of Unicode 15.1 and 16.0 to \p{L} and \p{N}, as Oniguruma's tables have
// them, so it agrees with the Matcher on every input.
type known struct {
	name    string
	pattern string
	match   Matcher
	exact   *regexp2.Regexp
	patched *regexp2.Regexp
}

var knownPatterns = func() []known {
	ks := []known{
		{name: "qwen2", pattern: PatternQwen2},
		{name: "cl100k", pattern: PatternCL100K},
		{name: "gpt2", pattern: PatternGPT2},
	}
	for i := range ks {
		k := &ks[i]
		k.match = For(k.pattern)
		k.exact = regexp2.MustCompile(k.pattern)
		k.patched = regexp2.MustCompile(patchUnicode16(k.pattern))
	}
	return ks
}()

// patchUnicode16 rewrites every \p{L} and \p{N} of pattern to include
// onigLetters and onigNumbers. It knows just enough syntax for the known
// patterns: escapes, and classes without nesting.
func patchUnicode16(pattern string) string {
	extra := map[string]string{`\p{L}`: classItems(onigLetters), `\p{N}`: classItems(onigNumbers)}
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pattern); {
		if pattern[i] == '\\' {
			if i+5 <= len(pattern) && extra[pattern[i:i+5]] != "" {
				p := pattern[i : i+5]
				if inClass {
					b.WriteString(p + extra[p])
				} else {
					b.WriteString("[" + p + extra[p] + "]")
				}
				i += 5
				continue
			}
			b.WriteString(pattern[i : i+2])
			i += 2
			continue
		}
		switch pattern[i] {
		case '[':
			inClass = true
		case ']':
			inClass = false
		}
		b.WriteByte(pattern[i])
		i++
	}
	return b.String()
}

// classItems writes the ranges of t as the items of a character class.
func classItems(t *unicode.RangeTable) string {
	var b strings.Builder
	for _, r := range t.R16 {
		fmt.Fprintf(&b, "%c-%c", rune(r.Lo), rune(r.Hi))
	}
	for _, r := range t.R32 {
		fmt.Fprintf(&b, "%c-%c", rune(r.Lo), rune(r.Hi))
	}
	return b.String()
}

// hasUnicode16 reports whether s holds a letter or number that Go's tables
// lack, where the exact regexp2 reference and Oniguruma disagree by design.
func hasUnicode16(s string) bool {
	for _, r := range s {
		if unicode.Is(onigLetters, r) || unicode.Is(onigNumbers, r) {
			return true
		}
	}
	return false
}

// refRanges returns the byte ranges of the matches of re in s.
func refRanges(tb testing.TB, re *regexp2.Regexp, s string) [][2]int {
	tb.Helper()
	idx, err := re.FindAllStringIndex(s, -1)
	if err != nil {
		tb.Fatalf("regexp2 %q on %q: %v", re.String(), abbrev(s), err)
	}
	if len(idx) == 0 {
		return nil
	}
	out := make([][2]int, len(idx))
	for i, p := range idx {
		out[i] = [2]int{p[0], p[1]}
	}
	return out
}

// refRangesIter collects the same ranges through FindStringMatch and
// FindNextMatch, converting rune offsets with ByteRange.
func refRangesIter(tb testing.TB, re *regexp2.Regexp, s string) [][2]int {
	tb.Helper()
	var out [][2]int
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		start, n := m.ByteRange()
		out = append(out, [2]int{start, start + n})
	}
	if err != nil {
		tb.Fatalf("regexp2 %q on %q: %v", re.String(), abbrev(s), err)
	}
	return out
}

// compare checks k's Matcher on s against the references that apply and
// reports the first difference. It returns whether they agreed.
func compare(tb testing.TB, k known, s string) bool {
	tb.Helper()
	got := k.match(nil, s)
	if !tiles(got, len(s)) {
		tb.Errorf("%s: %q: ranges %v do not tile the input", k.name, abbrev(s), got)
		return false
	}
	ok := true
	want := refRanges(tb, k.patched, s)
	if d := diff(s, got, want); d != "" {
		tb.Errorf("%s: %q: splitfast vs regexp2 (Unicode 16 patched): %s", k.name, abbrev(s), d)
		ok = false
	}
	if !hasUnicode16(s) {
		want := refRanges(tb, k.exact, s)
		if d := diff(s, got, want); d != "" {
			tb.Errorf("%s: %q: splitfast vs regexp2: %s", k.name, abbrev(s), d)
			ok = false
		}
	}
	return ok
}

// tiles reports whether rs are non-empty, in order, and cover [0, n)
// without gaps: every character starts a match of the known patterns.
func tiles(rs [][2]int, n int) bool {
	at := 0
	for _, r := range rs {
		if r[0] != at || r[1] <= r[0] {
			return false
		}
		at = r[1]
	}
	return at == n
}

// diff describes the first difference between two lists of ranges of s,
// or returns "".
func diff(s string, got, want [][2]int) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("missing match %d %v %q", i, want[i], s[want[i][0]:want[i][1]])
		case i >= len(want):
			return fmt.Sprintf("extra match %d %v %q", i, got[i], s[got[i][0]:got[i][1]])
		case got[i] != want[i]:
			return fmt.Sprintf("match %d: got %v %q, want %v %q", i,
				got[i], s[got[i][0]:got[i][1]], want[i], s[want[i][0]:want[i][1]])
		}
	}
	return ""
}

// pieces returns the substrings of s that rs cover.
func pieces(s string, rs [][2]int) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = s[r[0]:r[1]]
	}
	return out
}

func abbrev(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}
