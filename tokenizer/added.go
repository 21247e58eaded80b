package tokenizer

import (
	"sort"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	content    string
	id         int
	special    bool
	normalized bool
	lstrip     bool
	rstrip     bool
	singleWord bool
}

// addedVocab is Hugging Face's AddedVocabulary: the added tokens, matched
// in the text before the model sees it. Read-only once built.
type addedVocab struct {
	byContent map[string]int      // added_tokens_map
	byID      map[int]*addedToken // added_tokens_map_r
	decodeAs  map[int]string      // normalized_cache: the normalized text of normalized tokens
	special   map[string]bool     // special_tokens_set
	raw       *trie               // normalized:false tokens, matched on the raw text
	norm      *trie               // normalized:true tokens, matched on normalized pieces
}

// split is a stretch of a piece after added-token matching: an added
// token (id >= 0) or text to go on (id < 0).
type split struct {
	start, end int
	id         int
}

// findMatches cuts s at the added tokens of t, as Hugging Face's
// AddedVocabulary::find_matches does: the leftmost-longest matches over
// the whole of s come first, and only then are some dropped (special
// tokens when skipSpecial; single_word tokens touching a word character)
// or widened (lstrip, rstrip over white space).
func (a *addedVocab) findMatches(dst []split, s string, t *trie, skipSpecial bool, sc *scratch) []split {
	if t == nil {
		return append(dst, split{0, len(s), -1})
	}
	mark := len(sc.trieHits)
	sc.trieHits = t.appendMatches(sc.trieHits, s)
	startOffset := 0
	for _, m := range sc.trieHits[mark:] {
		start, stop := m[0], m[1]
		tok := a.byID[m[2]]
		if skipSpecial && tok.special {
			continue
		}
		if tok.singleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.lstrip {
			start = max(leadingSpaceOfEnd(s[:start]), startOffset)
		}
		if tok.rstrip {
			stop += trailingSpaceOfStart(s[stop:])
		}
		start = min(start, stop) // never reached by Hugging Face's own inputs; keeps slices valid
		if startOffset < start {
			dst = append(dst, split{startOffset, start, -1})
		}
		dst = append(dst, split{start, stop, tok.id})
		startOffset = stop
	}
	sc.trieHits = sc.trieHits[:mark]
	if startOffset < len(s) {
		dst = append(dst, split{startOffset, len(s), -1})
	}
	return dst
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isRustWord(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isRustWord(r)
}

// leadingSpaceOfEnd is where the white space at the end of s begins.
func leadingSpaceOfEnd(s string) int {
	i := len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !isRustWhitespace(r) {
			break
		}
		i -= n
	}
	return i
}

// trailingSpaceOfStart is the length of the white space s starts with.
func trailingSpaceOfStart(s string) int {
	for i, r := range s {
		if !isRustWhitespace(r) {
			return i
		}
	}
	return len(s)
}

// trie matches a set of strings, leftmost-longest, as daachorse's
// MatchKind::LeftmostLongest does: at the leftmost position where some
// pattern starts, the longest one; then on after it.
type trie struct {
	root  [256]int32 // child of the root for each byte; 0 when none
	nodes []trieNode
	edges []trieEdge // each node's children, sorted by byte
}

type trieNode struct {
	first, n int32 // the node's edges
	value    int32 // pattern value, -1 when no pattern ends here
}

type trieEdge struct {
	b     byte
	child int32
}

// newTrie builds a trie of patterns (non-empty, distinct) with their
// values.
func newTrie(patterns []string, values []int32) *trie {
	// Build with maps, then lay out compactly.
	type bnode struct {
		kids  map[byte]int
		value int32
	}
	b := []bnode{{value: -1}}
	for i, p := range patterns {
		cur := 0
		for j := 0; j < len(p); j++ {
			if b[cur].kids == nil {
				b[cur].kids = map[byte]int{}
			}
			next, ok := b[cur].kids[p[j]]
			if !ok {
				next = len(b)
				b = append(b, bnode{value: -1})
				b[cur].kids[p[j]] = next
			}
			cur = next
		}
		b[cur].value = values[i]
	}
	t := &trie{nodes: make([]trieNode, len(b))}
	for i, n := range b {
		keys := make([]int, 0, len(n.kids))
		for k := range n.kids {
			keys = append(keys, int(k))
		}
		sort.Ints(keys)
		t.nodes[i] = trieNode{first: int32(len(t.edges)), n: int32(len(keys)), value: n.value}
		for _, k := range keys {
			t.edges = append(t.edges, trieEdge{byte(k), int32(n.kids[byte(k)])})
			if i == 0 {
				t.root[k] = int32(n.kids[byte(k)])
			}
		}
	}
	return t
}

func (t *trie) child(node int32, c byte) int32 {
	n := t.nodes[node]
	edges := t.edges[n.first : n.first+n.n]
	lo, hi := 0, len(edges)
	for lo < hi {
		mid := (lo + hi) / 2
		if edges[mid].b < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(edges) && edges[lo].b == c {
		return edges[lo].child
	}
	return 0
}

// appendMatches appends [start, end, value] for each match in s.
func (t *trie) appendMatches(dst [][3]int, s string) [][3]int {
	for i := 0; i < len(s); {
		node := t.root[s[i]]
		if node == 0 {
			i++
			continue
		}
		best, bestValue := -1, int32(-1)
		for j := i + 1; ; j++ {
			if v := t.nodes[node].value; v >= 0 {
				best, bestValue = j, v
			}
			if j >= len(s) {
				break
			}
			if node = t.child(node, s[j]); node == 0 {
				break
			}
		}
		if best < 0 {
			i++
			continue
		}
		dst = append(dst, [3]int{i, best, int(bestValue)})
		i = best
	}
	return dst
}
