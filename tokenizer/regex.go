package tokenizer

import (
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"

	"github.com/tandemrl/tandem/tokenizer/internal/splitfast"
)

// A finder appends to dst the [start, end) byte ranges of its pattern's
// matches in s, in order and without overlap, as Hugging Face's
// Pattern::find_matches sees them. Oniguruma's find_iter, which it uses,
// reports leftmost-first matches and drops an empty match that starts
// where the previous match ended.
type finder interface {
	find(dst [][2]int, s string, sc *scratch) [][2]int
}

// literalFinder matches a fixed string (a {"String": ...} pattern, which
// Hugging Face escapes into a regular expression). The empty string
// matches at every character boundary.
type literalFinder struct{ lit string }

func (f literalFinder) find(dst [][2]int, s string, _ *scratch) [][2]int {
	if s == "" {
		return dst
	}
	if f.lit == "" {
		for i := range s {
			dst = append(dst, [2]int{i, i})
		}
		return append(dst, [2]int{len(s), len(s)})
	}
	for off := 0; ; {
		i := strings.Index(s[off:], f.lit)
		if i < 0 {
			return dst
		}
		dst = append(dst, [2]int{off + i, off + i + len(f.lit)})
		off += i + len(f.lit)
	}
}

// runeFinder matches every single character for which is returns true
// (Hugging Face's Fn(char) -> bool pattern).
type runeFinder struct{ is func(rune) bool }

func (f runeFinder) find(dst [][2]int, s string, _ *scratch) [][2]int {
	for i, r := range s {
		if f.is(r) {
			dst = append(dst, [2]int{i, i + utf8.RuneLen(r)})
		}
	}
	return dst
}

// regexFinder runs a regular expression: the hand-written splitter of
// package splitfast when it knows the pattern, else regexp2 in its
// default (not RE2) mode, whose classes match Oniguruma's for the patterns
// tokenizers use (\s is Unicode White_Space, \p{L} and \p{N} are Unicode
// categories), once onigPattern has brought them to Unicode 16.0.
type regexFinder struct {
	pattern string
	fast    splitfast.Matcher
	re      *regexp2.Regexp
}

// compileRegex compiles pattern, with its splitfast matcher unless
// noFast (tests use it to check the regexp2 path).
func compileRegex(pattern string, noFast bool) (*regexFinder, error) {
	f, err := compileRegexp2(pattern)
	if err != nil {
		return nil, err
	}
	if !noFast {
		f.fast = splitfast.For(pattern)
	}
	return f, nil
}

// compileRegexp2 compiles pattern for regexp2 alone (no splitfast).
func compileRegexp2(pattern string) (*regexFinder, error) {
	f := &regexFinder{pattern: pattern}
	// The backtracking stack is unbounded: the tokenizers' patterns need
	// one slot per character of a long run (200k spaces), and a limit would
	// end the match early.
	re, err := regexp2.Compile(onigPattern(pattern), regexp2.Multiline, regexp2.OptionMaxBacktrackingStackSize(-1))
	if err != nil {
		return nil, err
	}
	f.re = re
	return f, nil
}

func (f *regexFinder) find(dst [][2]int, s string, sc *scratch) [][2]int {
	if s == "" {
		return dst
	}
	if f.fast != nil {
		return f.fast(dst, s)
	}
	return sc.regexFind(f.re, dst, s)
}

// regexScratch is what a regexp2 search needs per call: the text as runes,
// the byte offset of each rune, and the rune ranges the callback collects.
type regexScratch struct {
	runes []rune
	offs  []int
	found [][2]int
	yield func(regexp2.MatchView) bool
}

func (sc *scratch) regexFind(re *regexp2.Regexp, dst [][2]int, s string) [][2]int {
	rs := &sc.re
	if rs.yield == nil {
		rs.yield = func(v regexp2.MatchView) bool {
			i, n, _ := v.GroupRange(0)
			rs.found = append(rs.found, [2]int{i, i + n})
			return true
		}
	}
	runes, offs := rs.runes[:0], rs.offs[:0]
	ascii := true
	for i, r := range s {
		runes = append(runes, r)
		offs = append(offs, i)
		if r >= utf8.RuneSelf {
			ascii = false
		}
	}
	offs = append(offs, len(s))
	rs.runes, rs.offs = runes, offs
	rs.found = rs.found[:0]
	// An error (none is expected: there is no time limit and no stack
	// limit) ends the search; the matches found so far stand.
	_ = re.FindRunesMatches(runes, 0, rs.yield)
	last := -1
	for _, m := range rs.found {
		start, end := m[0], m[1]
		if !ascii {
			start, end = offs[start], offs[end]
		}
		if start == end && start == last {
			continue
		}
		dst = append(dst, [2]int{start, end})
		last = end
	}
	return dst
}
