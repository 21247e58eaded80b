package tokenizer

import (
	"slices"
	"strings"
)

// A piece is a stretch of text on its way to the model: between added
// tokens, then normalized, then cut by the pre-tokenizers into words.
type piece struct {
	s string
	// first is set when the piece starts at offset 0 of the original
	// input, which Metaspace's prepend_scheme "first" asks.
	first bool
}

// A preTokenizer cuts (and may rewrite) one piece, appending the results
// to dst. Empty pieces are dropped, as Hugging Face drops them.
type preTokenizer interface {
	split(dst []piece, p piece, sc *scratch) []piece
}

// behavior is a SplitDelimiterBehavior: what becomes of the matches.
type behavior uint8

const (
	isolated behavior = iota
	removed
	mergedWithPrevious
	mergedWithNext
	contiguous
)

var behaviors = map[string]behavior{
	"Isolated":           isolated,
	"Removed":            removed,
	"MergedWithPrevious": mergedWithPrevious,
	"MergedWithNext":     mergedWithNext,
	"Contiguous":         contiguous,
}

// splitter is Hugging Face's NormalizedString::split with a pattern: the
// Split pre-tokenizer, and Digits, Punctuation, Whitespace and
// WhitespaceSplit, which are splits with fixed patterns.
type splitter struct {
	pattern  finder
	behavior behavior
	invert   bool
}

func (p splitter) split(dst []piece, in piece, sc *scratch) []piece {
	mark := len(sc.ranges)
	// At most one match per byte (and an empty one at the end).
	sc.ranges = slices.Grow(sc.ranges, len(in.s)+1)
	sc.ranges = p.pattern.find(sc.ranges, in.s, sc)
	dst = applyBehavior(dst, in, sc.ranges[mark:], p.behavior, p.invert, sc)
	sc.ranges = sc.ranges[:mark]
	return dst
}

// segment is a stretch of a split piece: a match (or, inverted, a gap).
type segment struct {
	start, end int
	match      bool
}

// applyBehavior turns the matches of a pattern in in.s into pieces, as
// NormalizedString::split does: first the alternation of gaps and matches
// (Pattern::find_matches), then the behavior's folding, then the slices,
// without the removed or empty ones.
func applyBehavior(dst []piece, in piece, matches [][2]int, b behavior, invert bool, sc *scratch) []piece {
	s := in.s
	if len(matches) == 0 {
		if invert && b == removed || s == "" {
			return dst
		}
		return append(dst, in)
	}
	// Size the lists once: growing them piecemeal costs more than the
	// work on a long input.
	need := 2*len(matches) + 1
	if cap(sc.segs) < need {
		sc.segs = make([]segment, 0, need)
		sc.segs2 = make([]segment, 0, need)
	}
	dst = slices.Grow(dst, need)
	segs := sc.segs[:0]
	prev := 0
	for _, m := range matches {
		if prev != m[0] {
			segs = append(segs, segment{prev, m[0], invert})
		}
		segs = append(segs, segment{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev != len(s) {
		segs = append(segs, segment{prev, len(s), invert})
	}
	// The fold: each entry of out is a segment; match now means "remove".
	out := sc.segs2[:0]
	switch b {
	case isolated:
		for _, g := range segs {
			out = append(out, segment{g.start, g.end, false})
		}
	case removed:
		out = append(out, segs...)
	case contiguous:
		prevMatch := false
		for _, g := range segs {
			if g.match == prevMatch && len(out) > 0 {
				out[len(out)-1].end = g.end
			} else {
				out = append(out, segment{g.start, g.end, false})
			}
			prevMatch = g.match
		}
	case mergedWithPrevious:
		prevMatch := false
		for _, g := range segs {
			if g.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = g.end
			} else {
				out = append(out, segment{g.start, g.end, false})
			}
			prevMatch = g.match
		}
	case mergedWithNext:
		// Hugging Face folds from the right; so does this, then reverses.
		prevMatch := false
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			if g.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = g.start
			} else {
				out = append(out, segment{g.start, g.end, false})
			}
			prevMatch = g.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	for _, g := range out {
		if g.match || g.start == g.end {
			continue
		}
		dst = append(dst, piece{s: s[g.start:g.end], first: in.first && g.start == 0})
	}
	sc.segs, sc.segs2 = segs, out
	return dst
}

// byteLevelPre is the ByteLevel pre-tokenizer. When it is the last
// pre-tokenizer (final), the byte-to-character mapping is left to the
// model, which reads the raw bytes; otherwise it maps each piece.
type byteLevelPre struct {
	addPrefixSpace bool
	regex          finder // the GPT-2 pattern when use_regex, else nil
	final          bool
}

func (p *byteLevelPre) split(dst []piece, in piece, sc *scratch) []piece {
	if p.addPrefixSpace && !strings.HasPrefix(in.s, " ") {
		in.s = " " + in.s
	}
	mark := len(dst)
	if p.regex != nil {
		m := len(sc.ranges)
		sc.ranges = p.regex.find(sc.ranges, in.s, sc)
		dst = applyBehavior(dst, in, sc.ranges[m:], isolated, false, sc)
		sc.ranges = sc.ranges[:m]
	} else if in.s != "" {
		dst = append(dst, in)
	}
	if !p.final {
		for i := mark; i < len(dst); i++ {
			dst[i].s = string(appendByteLevel(make([]byte, 0, 2*len(dst[i].s)), dst[i].s))
		}
	}
	return dst
}

// gpt2Pattern is the ByteLevel pre-tokenizer's regular expression.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// prependScheme is Metaspace's prepend_scheme.
type prependScheme uint8

const (
	prependAlways prependScheme = iota
	prependFirst
	prependNever
)

// metaspacePre is the Metaspace pre-tokenizer: spaces become the
// replacement character, which may be prepended, and the piece may be cut
// before each replacement character.
type metaspacePre struct {
	repl    string // one character
	scheme  prependScheme
	doSplit bool
}

func (p *metaspacePre) split(dst []piece, in piece, sc *scratch) []piece {
	s := strings.ReplaceAll(in.s, " ", p.repl)
	switch p.scheme {
	case prependAlways:
		if !strings.HasPrefix(s, p.repl) {
			s = p.repl + s
		}
	case prependFirst:
		if !strings.HasPrefix(s, p.repl) && in.first {
			s = p.repl + s
		}
	}
	in.s = s
	if !p.doSplit {
		if s == "" {
			return dst
		}
		return append(dst, in)
	}
	m := len(sc.ranges)
	sc.ranges = literalFinder{p.repl}.find(sc.ranges, s, sc)
	dst = applyBehavior(dst, in, sc.ranges[m:], mergedWithNext, false, sc)
	sc.ranges = sc.ranges[:m]
	return dst
}

// wordRunFinder matches the Whitespace pre-tokenizer's `\w+|[^\w\s]+`
// (regex crate, Unicode classes): runs of word characters and runs of
// other non-space characters.
type wordRunFinder struct{}

func (wordRunFinder) find(dst [][2]int, s string, _ *scratch) [][2]int {
	start, kind := -1, 0 // kind: 1 word run, 2 other run
	for i, r := range s {
		k := 2
		if isRustWord(r) {
			k = 1
		} else if isRustWhitespace(r) {
			k = 0
		}
		if k != kind {
			if kind != 0 {
				dst = append(dst, [2]int{start, i})
			}
			start, kind = i, k
		}
	}
	if kind != 0 {
		dst = append(dst, [2]int{start, len(s)})
	}
	return dst
}

// preSequence runs pre-tokenizers in order, each on every piece the one
// before it made.
type preSequence []preTokenizer

func (q preSequence) split(dst []piece, in piece, sc *scratch) []piece {
	mark := len(dst)
	dst = append(dst, in)
	for _, p := range q {
		// Cut dst[mark:] into the pieces after dst's current end, then move
		// them down.
		n := len(dst)
		for i := mark; i < n; i++ {
			dst = p.split(dst, dst[i], sc)
		}
		dst = append(dst[:mark], dst[n:]...)
	}
	return dst
}
