package tokenizer

import (
	"fmt"
	"strconv"
)

// modelJSON is tokenizer.json's model object: its vocab and merges read
// into arenas when they have the BPE/WordLevel shapes, the rest as values.
type modelJSON struct {
	rest   jv // the other members
	vocab  *vocabData
	merges *mergesData
}

// model reads the model object at the reader's position.
func (r *jreader) model() (*modelJSON, error) {
	m := &modelJSON{}
	rest, err := r.object(func(key string) (bool, error) {
		var err error
		switch {
		case key == "vocab" && r.peek() == '{':
			m.vocab, err = r.vocab("model.vocab")
			return true, err
		case key == "merges" && r.peek() == '[':
			m.merges, err = r.merges("model.merges")
			return true, err
		}
		return false, nil
	})
	m.rest = rest
	return m, err
}

var supportedModels = []string{"BPE", "WordLevel"}

// model builds the model. byteInput is set when a final ByteLevel
// pre-tokenizer leaves the byte mapping to the model.
func (l loader) model(m *modelJSON, byteInput bool) (model, error) {
	const path = "model"
	typ, ok, err := l.optStr(&m.rest, "type", path)
	if err != nil {
		return nil, err
	}
	if !ok {
		// Hugging Face then tries each model in turn; only BPE has merges.
		if m.merges == nil && m.rest.get("merges") == nil {
			return nil, l.errf(path, `missing "type"`)
		}
		typ = "BPE"
	}
	switch typ {
	case "BPE":
		return l.bpeModel(m, byteInput)
	case "WordLevel":
		return l.wordLevelModel(m, byteInput)
	}
	return nil, l.unknownType(path, typ, supportedModels, "WordPiece", "Unigram")
}

func (l loader) modelVocab(m *modelJSON) (*vocab, error) {
	if m.vocab == nil {
		if v := m.rest.get("vocab"); v != nil {
			return nil, l.errf("model.vocab", "want an object of token ids, got %s", v.kind)
		}
		return nil, l.errf("model", `missing "vocab"`)
	}
	for i, id := range m.vocab.ids {
		if id > 1<<31-1 {
			tok := string(m.vocab.arena[m.vocab.start(i):m.vocab.ends[i]])
			return nil, l.errf(fmt.Sprintf("model.vocab[%q]", tok), "id %d is too large (at most 2147483647)", id)
		}
	}
	return newVocab(m.vocab), nil
}

func (l loader) wordLevelModel(m *modelJSON, byteInput bool) (model, error) {
	v, err := l.modelVocab(m)
	if err != nil {
		return nil, err
	}
	unk, err := l.str(&m.rest, "unk_token", "model")
	if err != nil {
		return nil, err
	}
	id, ok := v.id(unk)
	if !ok {
		return nil, l.errf("model.unk_token", "%q is not in the vocabulary", unk)
	}
	return &wordLevel{v: v, unk: id, byteInput: byteInput}, nil
}

func (l loader) bpeModel(m *modelJSON, byteInput bool) (model, error) {
	const path = "model"
	v, err := l.modelVocab(m)
	if err != nil {
		return nil, err
	}
	if m.merges == nil {
		if mv := m.rest.get("merges"); mv != nil {
			return nil, l.errf("model.merges", "want an array of merges, got %s", mv.kind)
		}
		return nil, l.errf(path, `missing "merges"`)
	}
	b := &bpe{v: v, unk: -1, byteInput: byteInput}
	rest := &m.rest
	if d := rest.get("dropout"); d != nil && d.kind != jNull {
		if d.kind != jNumber || d.s != "0" && d.s != "0.0" {
			return nil, l.unsupported("model.dropout", "dropout %s is not supported (want null: encoding is deterministic)", describe(d))
		}
	}
	if unk, ok, err := l.optStr(rest, "unk_token", path); err != nil {
		return nil, err
	} else if ok {
		id, ok := v.id(unk)
		if !ok {
			return nil, l.errf("model.unk_token", "%q is not in the vocabulary", unk)
		}
		b.unk = id
	}
	if b.prefix, _, err = l.optStr(rest, "continuing_subword_prefix", path); err != nil {
		return nil, err
	}
	if b.suffix, _, err = l.optStr(rest, "end_of_word_suffix", path); err != nil {
		return nil, err
	}
	if b.fuseUnk, err = l.boolean(rest, "fuse_unk", path, false); err != nil {
		return nil, err
	}
	if b.byteFallback, err = l.boolean(rest, "byte_fallback", path, false); err != nil {
		return nil, err
	}
	if b.ignoreMerges, err = l.boolean(rest, "ignore_merges", path, false); err != nil {
		return nil, err
	}
	if b.merges, err = l.mergeTable(m.merges, v, len(b.prefix)); err != nil {
		return nil, err
	}
	b.setup()
	return b, nil
}

// mergeTable resolves the merges to ids, as BpeBuilder::build does: both
// halves and their concatenation (the second half without the
// continuing-subword prefix's bytes) must be tokens; rank is the index.
func (l loader) mergeTable(md *mergesData, v *vocab, prefixLen int) (*mergeTable, error) {
	n := md.len()
	t := newMergeTable(n)
	var buf []byte
	for i := range n {
		a, b := md.pair(i)
		aID, ok := v.ids[string(a)]
		if !ok {
			return nil, l.mergeErr(i, a, b, a)
		}
		bID, ok := v.ids[string(b)]
		if !ok {
			return nil, l.mergeErr(i, a, b, b)
		}
		if len(b) < prefixLen {
			return nil, l.errf("model.merges", "merge %d (%q %q): %q is shorter than the continuing_subword_prefix", i+1, a, b, b)
		}
		buf = append(append(buf[:0], a...), b[prefixLen:]...)
		newID, ok := v.ids[string(buf)]
		if !ok {
			return nil, l.mergeErr(i, a, b, buf)
		}
		t.put(aID, bID, uint32(i), newID)
	}
	return t, nil
}

func (l loader) mergeErr(i int, a, b, missing []byte) error {
	return l.errf("model.merges", "merge %d (%s %s): %s is not in the vocabulary",
		i+1, strconv.Quote(string(a)), strconv.Quote(string(b)), strconv.Quote(string(missing)))
}
