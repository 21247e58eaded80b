package tokenizer

// mergeTable maps a pair of token ids to its merge: the rank (the merge's
// index in the file) and the id of the merged token. It is an
// open-addressing hash table with linear probing, built once and then
// only read, so it is safe for concurrent readers.
type mergeTable struct {
	slots []mergeSlot
	mask  uint64
	n     int
}

type mergeSlot struct {
	key uint64 // pairKey; emptyPair when free
	val uint64 // rank<<32 | new id
}

const emptyPair = ^uint64(0)

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func newMergeTable(capacity int) *mergeTable {
	size := 16
	for size < capacity+capacity/2 {
		size <<= 1
	}
	t := &mergeTable{slots: make([]mergeSlot, size), mask: uint64(size - 1)}
	for i := range t.slots {
		t.slots[i].key = emptyPair
	}
	return t
}

func hashPair(k uint64) uint64 {
	k ^= k >> 29
	k *= 0x9E3779B97F4A7C15
	return k ^ k>>32
}

// put sets the merge of a pair; a later put of the same pair replaces the
// earlier one, as Hugging Face's map keeps the last duplicate merge line.
// The table must not be full (newMergeTable sizes it for capacity pairs).
func (t *mergeTable) put(a, b int32, rank uint32, newID int32) {
	k := pairKey(a, b)
	v := uint64(rank)<<32 | uint64(uint32(newID))
	for i := hashPair(k) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == k {
			s.val = v
			return
		}
		if s.key == emptyPair {
			s.key, s.val = k, v
			t.n++
			return
		}
	}
}

// get returns the rank and merged id of a pair.
func (t *mergeTable) get(a, b int32) (rank uint32, newID int32, ok bool) {
	k := pairKey(a, b)
	for i := hashPair(k) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == k {
			return uint32(s.val >> 32), int32(uint32(s.val)), true
		}
		if s.key == emptyPair {
			return 0, 0, false
		}
	}
}
