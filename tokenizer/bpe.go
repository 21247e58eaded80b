package tokenizer

import (
	"unicode/utf8"
)

// bpe is the BPE model (models/bpe in Hugging Face's crate).
type bpe struct {
	v      *vocab
	merges *mergeTable

	unk          int32 // -1: none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix

	// byteInput: words arrive as raw text that a final ByteLevel
	// pre-tokenizer left unmapped; the model maps each byte to its
	// ByteLevel character. byteIDs holds the ids of those 256 characters,
	// usable directly as the initial symbols when fastBytes (all are in the
	// vocabulary and there is no prefix or suffix).
	byteInput bool
	fastBytes bool
	byteIDs   [256]int32

	fallbackIDs [256]int32 // ids of "<0xNN>", -1 when absent
	// runeIDs[r] is the id of the one-character token r (-1 when none), for
	// the characters below len(runeIDs); it spares a map lookup per
	// character of a word.
	runeIDs []int32

	cache *wordCache
}

const runeTableSize = 1 << 16

func (m *bpe) vocabulary() *vocab { return m.v }

// setup fills the lookup tables once vocab, prefix and suffix are known.
func (m *bpe) setup() {
	for b := range 256 {
		m.fallbackIDs[b] = -1
		if id, ok := m.v.id(fallbackToken(byte(b))); ok {
			m.fallbackIDs[b] = id
		}
	}
	m.fastBytes = m.byteInput && m.prefix == "" && m.suffix == ""
	for b := range 256 {
		id, ok := m.v.id(byteToUTF8[b])
		m.byteIDs[b] = id
		if !ok {
			m.fastBytes = false
		}
	}
	if m.prefix == "" && m.suffix == "" {
		m.runeIDs = make([]int32, runeTableSize)
		for i := range m.runeIDs {
			m.runeIDs[i] = -1
		}
		for tok, id := range m.v.ids {
			if r, n := utf8.DecodeRuneInString(tok); n == len(tok) && r < runeTableSize && r != utf8.RuneError {
				m.runeIDs[r] = id
			}
		}
		if id, ok := m.v.id("\uFFFD"); ok {
			m.runeIDs[utf8.RuneError] = id
		}
	}
	m.cache = newWordCache()
}

// fallbackToken is the byte_fallback token of b: "<0x0A>".
func fallbackToken(b byte) string {
	const hexd = "0123456789ABCDEF"
	return string([]byte{'<', '0', 'x', hexd[b>>4], hexd[b&15], '>'})
}

func (m *bpe) encodeWord(dst []int, w string, sc *scratch) []int {
	cacheable := len(w) < maxCachedWord
	if cacheable {
		if ids, ok := m.cache.get(w); ok {
			for _, id := range ids {
				dst = append(dst, int(id))
			}
			return dst
		}
	}
	start := len(dst)
	dst = m.encodeUncached(dst, w, sc)
	if cacheable {
		m.cache.put(w, dst[start:])
	}
	return dst
}

func (m *bpe) encodeUncached(dst []int, w string, sc *scratch) []int {
	b := &sc.bpe
	b.sym = b.sym[:0]
	switch {
	case m.fastBytes:
		if m.ignoreMerges {
			b.text = appendByteLevel(b.text[:0], w)
			if id, ok := m.v.ids[string(b.text)]; ok {
				return append(dst, int(id))
			}
		}
		for i := 0; i < len(w); i++ {
			b.sym = append(b.sym, m.byteIDs[w[i]])
		}
	case m.byteInput:
		b.text = appendByteLevel(b.text[:0], w)
		if m.ignoreMerges {
			if id, ok := m.v.ids[string(b.text)]; ok {
				return append(dst, int(id))
			}
		}
		m.initialSymbols(b.text, sc)
	default:
		if m.ignoreMerges {
			if id, ok := m.v.ids[w]; ok {
				return append(dst, int(id))
			}
		}
		b.text = append(b.text[:0], w...)
		m.initialSymbols(b.text, sc)
	}
	m.mergeAll(b)
	for i, id := range b.sym {
		if b.next[i] != dead {
			dst = append(dst, int(id))
		}
	}
	return dst
}

// initialSymbols looks up each character of word, as Hugging Face's
// merge_word does: with the prefix before all but the first and the
// suffix after the last; a character not in the vocabulary becomes its
// <0xNN> bytes (byte_fallback, when all of them exist) or the unknown
// token, and with fuse_unk a run of unknowns becomes one.
func (m *bpe) initialSymbols(word []byte, sc *scratch) {
	b := &sc.bpe
	pendingUnk := false
	for i := 0; i < len(word); {
		r, n := utf8.DecodeRune(word[i:])
		ch := word[i : i+n]
		isFirst, isLast := i == 0, i+n == len(word)
		i += n
		id, ok := int32(-1), false
		if m.runeIDs != nil {
			if r < runeTableSize && (r != utf8.RuneError || n == 3) {
				id = m.runeIDs[r]
				ok = id >= 0
			} else {
				id, ok = m.v.ids[string(ch)]
			}
		} else {
			t := b.tok[:0]
			if !isFirst {
				t = append(t, m.prefix...)
			}
			t = append(t, ch...)
			if isLast {
				t = append(t, m.suffix...)
			}
			b.tok = t
			ch = t
			id, ok = m.v.ids[string(t)]
		}
		if ok {
			if pendingUnk {
				b.sym = append(b.sym, m.unk)
				pendingUnk = false
			}
			b.sym = append(b.sym, id)
			continue
		}
		if m.byteFallback && m.hasFallback(ch) {
			// As in Hugging Face, a pending unknown is not flushed first.
			for _, c := range ch {
				b.sym = append(b.sym, m.fallbackIDs[c])
			}
			continue
		}
		if m.unk >= 0 {
			if pendingUnk && !m.fuseUnk {
				b.sym = append(b.sym, m.unk)
			}
			pendingUnk = true
		}
	}
	if pendingUnk {
		b.sym = append(b.sym, m.unk)
	}
}

func (m *bpe) hasFallback(ch []byte) bool {
	for _, c := range ch {
		if m.fallbackIDs[c] < 0 {
			return false
		}
	}
	return true
}

// bpeScratch holds a word's symbols while it is merged: sym[i] is the id
// of symbol i, prev/next link the live symbols (next is dead for a symbol
// merged into its left neighbour), heap the candidate merges.
type bpeScratch struct {
	sym        []int32
	prev, next []int32
	heap       mergeHeap
	text, tok  []byte
}

const (
	dead int32 = -2 // next of a merged-away symbol
	none int32 = -1 // prev of the first symbol, next of the last
)

// mergeAll applies the merges to b.sym as Hugging Face's Word::merge_all
// does: repeatedly the candidate pair of lowest rank, the leftmost among
// equal ranks, skipping candidates that no longer hold.
func (m *bpe) mergeAll(b *bpeScratch) {
	n := len(b.sym)
	b.prev = growInt32(b.prev, n)
	b.next = growInt32(b.next, n)
	for i := range n {
		b.prev[i] = int32(i) - 1
		b.next[i] = int32(i) + 1
	}
	if n == 0 {
		return
	}
	b.next[n-1] = none
	if n == 1 {
		return
	}
	h := &b.heap
	h.items = h.items[:0]
	for i := 0; i+1 < n; i++ {
		if rank, id, ok := m.merges.get(b.sym[i], b.sym[i+1]); ok {
			h.items = append(h.items, mergeItem{key: uint64(rank)<<32 | uint64(i), newID: id})
		}
	}
	h.init()
	sym, prev, next := b.sym, b.prev, b.next
	for len(h.items) > 0 {
		top := h.pop()
		pos := int32(uint32(top.key))
		nx := next[pos]
		if nx < 0 { // merged away (dead) or the last symbol (none)
			continue
		}
		if _, id, ok := m.merges.get(sym[pos], sym[nx]); !ok || id != top.newID {
			continue
		}
		sym[pos] = top.newID
		after := next[nx]
		next[nx] = dead
		next[pos] = after
		if after >= 0 {
			prev[after] = pos
		}
		if p := prev[pos]; p >= 0 {
			if rank, id, ok := m.merges.get(sym[p], sym[pos]); ok {
				h.push(mergeItem{key: uint64(rank)<<32 | uint64(p), newID: id})
			}
		}
		if after >= 0 {
			if rank, id, ok := m.merges.get(sym[pos], sym[after]); ok {
				h.push(mergeItem{key: uint64(rank)<<32 | uint64(pos), newID: id})
			}
		}
	}
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n, n+n/2)
	}
	return s[:n]
}

// mergeItem is a candidate merge: key is rank<<32 | position, so the
// smallest key is the lowest rank, then the leftmost position.
type mergeItem struct {
	key   uint64
	newID int32
}

// mergeHeap is a binary min-heap of candidates by key.
type mergeHeap struct{ items []mergeItem }

func (h *mergeHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(it mergeItem) {
	h.items = append(h.items, it)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.items[p].key <= it.key {
			break
		}
		h.items[i] = h.items[p]
		i = p
	}
	h.items[i] = it
}

func (h *mergeHeap) pop() mergeItem {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h *mergeHeap) down(i int) {
	items := h.items
	n := len(items)
	it := items[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && items[c+1].key < items[c].key {
			c++
		}
		if it.key <= items[c].key {
			break
		}
		items[i] = items[c]
		i = c
	}
	items[i] = it
}
