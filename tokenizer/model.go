package tokenizer

// A model turns one word (a pre-token) into ids.
type model interface {
	// encodeWord appends the ids of w to dst.
	encodeWord(dst []int, w string, sc *scratch) []int
	vocabulary() *vocab
}

// vocab is a model's token ↔ id table. It is read-only once built.
type vocab struct {
	ids map[string]int32
	// The reverse: dense when the ids are (mostly) 0..n-1, else a map, so
	// that a file with one huge id cannot make a huge slice.
	dense    []string
	denseSet []bool
	sparse   map[int32]string
}

// newVocab builds the table from token/id pairs in file order; a token
// that repeats keeps its last id, as a map built from the JSON object
// would.
func newVocab(v *vocabData) *vocab {
	arena := string(v.arena) // one copy; every token is a slice of it
	m := make(map[string]int32, len(v.ids))
	var maxID uint32
	for i, id := range v.ids {
		m[arena[v.start(i):v.ends[i]]] = int32(id)
		maxID = max(maxID, id)
	}
	out := &vocab{ids: m}
	if len(m) > 0 && int64(maxID) < 2*int64(len(m))+1024 {
		out.dense = make([]string, maxID+1)
		out.denseSet = make([]bool, maxID+1)
		for tok, id := range m {
			out.dense[id], out.denseSet[id] = tok, true
		}
	} else {
		out.sparse = make(map[int32]string, len(m))
		for tok, id := range m {
			out.sparse[id] = tok
		}
	}
	// Ids above 2^31 cannot be used by Go ints on every platform the same
	// way; newVocab's callers reject them first.
	return out
}

func (v *vocab) id(tok string) (int32, bool) {
	id, ok := v.ids[tok]
	return id, ok
}

func (v *vocab) token(id int) (string, bool) {
	if id < 0 {
		return "", false
	}
	if v.sparse != nil {
		t, ok := v.sparse[int32(id)]
		return t, ok && id <= 1<<31-1
	}
	if id >= len(v.dense) || !v.denseSet[id] {
		return "", false
	}
	return v.dense[id], true
}

// size is Hugging Face's get_vocab_size of the model: the number of
// distinct tokens.
func (v *vocab) size() int { return len(v.ids) }

// wordLevel is the WordLevel model: one id per word, or the unknown token.
type wordLevel struct {
	v         *vocab
	unk       int32
	byteInput bool // words arrive unmapped from a final ByteLevel (see bpe)
}

func (m *wordLevel) encodeWord(dst []int, w string, sc *scratch) []int {
	var id int32
	ok := false
	if m.byteInput {
		sc.bpe.text = appendByteLevel(sc.bpe.text[:0], w)
		id, ok = m.v.ids[string(sc.bpe.text)]
	} else {
		id, ok = m.v.id(w)
	}
	if ok {
		return append(dst, int(id))
	}
	return append(dst, int(m.unk))
}

func (m *wordLevel) vocabulary() *vocab { return m.v }
