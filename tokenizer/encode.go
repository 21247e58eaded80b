package tokenizer

import (
	"slices"
	"strings"
	"unsafe"
)

// scratch is the working memory of one Encode call: reused through a
// sync.Pool, so a warm Encode allocates nothing of its own.
type scratch struct {
	splits1, splits2 []split   // added-token splits of the text, of a normalized piece
	words            []piece   // the pre-tokenizer's output for a piece
	ranges           [][2]int  // pattern matches (a stack: callers truncate to their mark)
	trieHits         [][3]int  // added-token matches
	segs, segs2      []segment // applyBehavior's working lists
	ids              []int     // the encoding before a post-processor template
	norm             []byte    // the text's normalized pieces (see normalizePiece)
	re               regexScratch
	bpe              bpeScratch
}

func (t *Tokenizer) getScratch() *scratch {
	if sc, ok := t.pool.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

// putScratch returns sc to the pool unless one of its buffers grew past
// what is worth keeping (a huge input would pin its memory).
func (t *Tokenizer) putScratch(sc *scratch) {
	const keep = 1 << 16
	if cap(sc.re.runes) > keep || cap(sc.words) > keep || cap(sc.ranges) > keep ||
		cap(sc.bpe.sym) > keep || cap(sc.ids) > keep || cap(sc.segs) > keep || cap(sc.norm) > keep {
		return
	}
	t.pool.Put(sc)
}

// encodeText is the pipeline of Hugging Face's encode_single_sequence, for
// text that is valid UTF-8: added tokens on the raw text, then for each
// stretch between them the normalizer, added tokens on the normalized
// text, the pre-tokenizer and the model.
func (t *Tokenizer) encodeText(dst []int, text string, skipSpecial bool, sc *scratch) []int {
	a := t.added
	sc.splits1 = a.findMatches(sc.splits1[:0], text, a.raw, skipSpecial, sc)
	t.startNormalizing(text, sc)
	for _, s1 := range sc.splits1 {
		if s1.id >= 0 {
			dst = append(dst, s1.id)
			continue
		}
		if s1.start == s1.end {
			continue
		}
		p := piece{s: text[s1.start:s1.end], first: s1.start == 0}
		if t.normalizer != nil {
			p.s = t.normalizePiece(p.s, sc)
		}
		if a.norm == nil {
			dst = t.encodePiece(dst, p, sc)
			continue
		}
		sc.splits2 = a.findMatches(sc.splits2[:0], p.s, a.norm, skipSpecial, sc)
		for _, s2 := range sc.splits2 {
			if s2.id >= 0 {
				dst = append(dst, s2.id)
				continue
			}
			dst = t.encodePiece(dst, piece{s: p.s[s2.start:s2.end], first: p.first && s2.start == 0}, sc)
		}
	}
	return dst
}

// literalReplace reports whether the normalizer is one Replace of a
// non-empty literal (Gemma 3's " " → "▁"), and which.
func (t *Tokenizer) literalReplace() (lit, content string, ok bool) {
	r, ok := t.normalizer.(replace)
	if !ok {
		return "", "", false
	}
	f, ok := r.pattern.(literalFinder)
	if !ok || f.lit == "" {
		return "", "", false
	}
	return f.lit, r.content, true
}

// startNormalizing readies sc.norm for the pieces of text. A literal
// Replace changes nearly every piece of a Gemma 3 text (each line between
// its "\n" tokens), and strings.ReplaceAll would allocate once per line;
// normalizePiece writes them all into sc.norm instead, grown here to hold
// every piece, so a warm encode allocates nothing for them.
func (t *Tokenizer) startNormalizing(text string, sc *scratch) {
	sc.norm = sc.norm[:0]
	lit, content, ok := t.literalReplace()
	if !ok {
		return
	}
	if n := strings.Count(text, lit); n > 0 {
		sc.norm = slices.Grow(sc.norm, len(text)+n*max(0, len(content)-len(lit)))
	}
}

// normalizePiece runs the normalizer on one piece of the text that
// startNormalizing was given: a literal Replace into sc.norm, as
// strings.ReplaceAll would, any other normalizer as it is.
//
// A string it makes shares sc.norm's memory, which only grows while the
// text is encoded (so earlier pieces stay as they are) and is written
// over for the next text: it and the words cut from it must not be kept
// past the encode call. Nothing keeps them (the word cache stores a copy).
func (t *Tokenizer) normalizePiece(s string, sc *scratch) string {
	lit, content, ok := t.literalReplace()
	if !ok || !strings.Contains(s, lit) {
		return t.normalizer.normalize(s, sc)
	}
	start := len(sc.norm)
	for {
		i := strings.Index(s, lit)
		if i < 0 {
			break
		}
		sc.norm = append(sc.norm, s[:i]...)
		sc.norm = append(sc.norm, content...)
		s = s[i+len(lit):]
	}
	sc.norm = append(sc.norm, s...)
	if len(sc.norm) == start {
		return ""
	}
	return unsafe.String(&sc.norm[start], len(sc.norm)-start)
}

// encodePiece pre-tokenizes a piece and runs the model on each word.
func (t *Tokenizer) encodePiece(dst []int, p piece, sc *scratch) []int {
	if p.s == "" {
		return dst
	}
	if t.pre == nil {
		return t.model.encodeWord(dst, p.s, sc)
	}
	sc.words = t.pre.split(sc.words[:0], p, sc)
	for _, w := range sc.words {
		dst = t.model.encodeWord(dst, w.s, sc)
	}
	return dst
}

// template is a post-processor reduced to what it does to a single
// sequence's ids: the items in order, each the sequence or fixed ids.
type template []templateItem

type templateItem struct {
	seq bool
	ids []int
}

// apply writes the template around ids (the encoded sequence) to dst.
func (tp template) apply(dst, ids []int) []int {
	for _, it := range tp {
		if it.seq {
			dst = append(dst, ids...)
		} else {
			dst = append(dst, it.ids...)
		}
	}
	return dst
}

// wraps tells whether tp is prefix ids, the sequence once, suffix ids.
func (tp template) wraps() (prefix, suffix []int, ok bool) {
	seen := false
	for _, it := range tp {
		switch {
		case it.seq && seen:
			return nil, nil, false
		case it.seq:
			seen = true
		case seen:
			suffix = append(suffix, it.ids...)
		default:
			prefix = append(prefix, it.ids...)
		}
	}
	return prefix, suffix, seen
}
