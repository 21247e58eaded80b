package tokenizer

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

const tokenizerFile = "tokenizer.json"

// loader reads typed fields out of parsed JSON, with errors that name the
// file and the JSON path.
type loader struct {
	file   string
	noFast bool // regexp2 only, no splitfast (for tests)
}

func (l loader) errf(path, format string, args ...any) error {
	return &LoadError{File: l.file, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func (l loader) unsupported(path, format string, args ...any) error {
	return &LoadError{File: l.file, Path: path, Msg: fmt.Sprintf(format, args...), Unsupported: true}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func (l loader) object(v *jv, path string) error {
	if v.kind != jObject {
		return l.errf(path, "want an object, got %s", v.kind)
	}
	return nil
}

// typeOf returns the "type" member of a component object.
func (l loader) typeOf(v *jv, path string) (string, error) {
	if err := l.object(v, path); err != nil {
		return "", err
	}
	t := v.get("type")
	if t == nil {
		return "", l.errf(path, `missing "type"`)
	}
	if t.kind != jString {
		return "", l.errf(join(path, "type"), "want a string, got %s", t.kind)
	}
	return t.s, nil
}

func (l loader) unknownType(path, typ string, supported []string, unsupported ...string) error {
	for _, u := range unsupported {
		if typ == u {
			return l.unsupported(path, "unsupported type %q (supported: %s)", typ, strings.Join(supported, ", "))
		}
	}
	return l.unsupported(path, "unknown type %q (supported: %s)", typ, strings.Join(supported, ", "))
}

// str reads a required string member.
func (l loader) str(v *jv, key, path string) (string, error) {
	m := v.get(key)
	if m == nil {
		return "", l.errf(path, "missing %q", key)
	}
	if m.kind != jString {
		return "", l.errf(join(path, key), "want a string, got %s", m.kind)
	}
	return m.s, nil
}

// optStr reads a string member that may be absent or null.
func (l loader) optStr(v *jv, key, path string) (string, bool, error) {
	m := v.get(key)
	if m == nil || m.kind == jNull {
		return "", false, nil
	}
	if m.kind != jString {
		return "", false, l.errf(join(path, key), "want a string or null, got %s", m.kind)
	}
	return m.s, true, nil
}

// boolean reads a boolean member; absent or null gives def.
func (l loader) boolean(v *jv, key, path string, def bool) (bool, error) {
	m := v.get(key)
	if m == nil || m.kind == jNull {
		return def, nil
	}
	if m.kind != jBool {
		return false, l.errf(join(path, key), "want true or false, got %s", m.kind)
	}
	return m.b, nil
}

// uint reads a non-negative integer member; absent or null gives def.
func (l loader) uint(v *jv, key, path string, def int) (int, error) {
	m := v.get(key)
	if m == nil || m.kind == jNull {
		return def, nil
	}
	n, err := l.uintValue(m, join(path, key))
	return n, err
}

func (l loader) uintValue(m *jv, path string) (int, error) {
	if m.kind == jNumber {
		if n, err := strconv.ParseUint(m.s, 10, 31); err == nil {
			return int(n), nil
		}
	}
	return 0, l.errf(path, "want an integer from 0 to 2147483647, got %s", describe(m))
}

func describe(v *jv) string {
	if v.kind == jNumber {
		return v.s
	}
	return v.kind.String()
}

// char reads a member holding a one-character string (a Rust char).
func (l loader) char(v *jv, key, path string, def rune) (rune, error) {
	m := v.get(key)
	if m == nil {
		return def, nil
	}
	if m.kind == jString && utf8.RuneCountInString(m.s) == 1 {
		r, _ := utf8.DecodeRuneInString(m.s)
		return r, nil
	}
	return 0, l.errf(join(path, key), "want a one-character string, got %s", describe(m))
}

// list reads an array member.
func (l loader) list(v *jv, key, path string) ([]jv, error) {
	m := v.get(key)
	if m == nil {
		return nil, l.errf(path, "missing %q", key)
	}
	if m.kind != jArray {
		return nil, l.errf(join(path, key), "want an array, got %s", m.kind)
	}
	return m.arr, nil
}

// parseTokenizer reads tokenizer.json.
func parseTokenizer(data []byte, noFast bool) (*Tokenizer, error) {
	l := loader{file: tokenizerFile, noFast: noFast}
	r := &jreader{file: tokenizerFile, data: data}
	var mj *modelJSON
	top, err := r.document(func(key string) (bool, error) {
		if key != "model" || r.peek() != '{' {
			return false, nil
		}
		m, err := r.model()
		mj = m
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if err := l.object(&top, ""); err != nil {
		return nil, err
	}
	if v, ok, err := l.optStr(&top, "version", ""); err != nil {
		return nil, err
	} else if ok && v != "1.0" {
		return nil, l.errf("version", "unknown tokenizer.json version %q (want \"1.0\")", v)
	}
	for _, key := range []string{"truncation", "padding"} {
		if m := top.get(key); m != nil && m.kind != jNull {
			return nil, l.unsupported(key, "%s is set; this package encodes one sequence without %s (set it to null)", key, key)
		}
	}
	t := &Tokenizer{}
	if m := top.get("model"); m != nil || mj == nil {
		// The model was not an object (the hook only takes objects).
		if m == nil {
			return nil, l.errf("", `missing "model"`)
		}
		return nil, l.errf("model", "want an object, got %s", m.kind)
	}
	if t.normalizer, err = l.normalizer(top.get("normalizer"), "normalizer"); err != nil {
		return nil, err
	}
	byteInput := false
	if t.pre, byteInput, err = l.preTokenizer(top.get("pre_tokenizer"), "pre_tokenizer"); err != nil {
		return nil, err
	}
	if t.model, err = l.model(mj, byteInput); err != nil {
		return nil, err
	}
	steps, err := l.postProcessor(nil, top.get("post_processor"), "post_processor")
	if err != nil {
		return nil, err
	}
	if t.post, err = reduce(steps, true); err != nil {
		return nil, err
	}
	if t.postPlain, err = reduce(steps, false); err != nil {
		return nil, err
	}
	t.prefix, t.suffix, t.wraps = t.post.wraps()
	dec := top.get("decoder")
	t.noDecoder = dec == nil || dec.kind == jNull
	if !t.noDecoder {
		if t.decoders, err = l.decoder(dec, "decoder"); err != nil {
			return nil, err
		}
	}
	var added []jv
	if a := top.get("added_tokens"); a != nil && a.kind != jNull {
		if a.kind != jArray {
			return nil, l.errf("added_tokens", "want an array, got %s", a.kind)
		}
		added = a.arr
	}
	if t.added, err = l.addedVocab(added, t.model.vocabulary(), t.normalizer); err != nil {
		return nil, err
	}
	t.vocabSize = t.model.vocabulary().size()
	for content := range t.added.byContent {
		if _, ok := t.model.vocabulary().id(content); !ok {
			t.vocabSize++
		}
	}
	return t, nil
}

// addedVocab builds the added vocabulary as Hugging Face's add_tokens
// does: the "id" written in the file is not read; a token already in the
// vocabulary keeps its id, a new one gets the next id after the model's.
func (l loader) addedVocab(list []jv, v *vocab, norm normalizer) (*addedVocab, error) {
	a := &addedVocab{
		byContent: map[string]int{},
		byID:      map[int]*addedToken{},
		decodeAs:  map[int]string{},
		special:   map[string]bool{},
	}
	nextID := v.size()
	var sc scratch
	for i := range list {
		path := index("added_tokens", i)
		e := &list[i]
		if err := l.object(e, path); err != nil {
			return nil, err
		}
		tok := &addedToken{}
		var err error
		if tok.content, err = l.str(e, "content", path); err != nil {
			return nil, err
		}
		if tok.special, err = l.boolean(e, "special", path, false); err != nil {
			return nil, err
		}
		if tok.normalized, err = l.boolean(e, "normalized", path, true); err != nil {
			return nil, err
		}
		if tok.lstrip, err = l.boolean(e, "lstrip", path, false); err != nil {
			return nil, err
		}
		if tok.rstrip, err = l.boolean(e, "rstrip", path, false); err != nil {
			return nil, err
		}
		if tok.singleWord, err = l.boolean(e, "single_word", path, false); err != nil {
			return nil, err
		}
		if tok.content == "" {
			continue
		}
		if id, ok := a.byContent[tok.content]; ok {
			if old := a.byID[id]; old != nil && sameFlags(old, tok) {
				continue
			}
		}
		id, ok := a.byContent[tok.content]
		if !ok {
			var id32 int32
			if id32, ok = v.id(tok.content); ok {
				id = int(id32)
			}
		}
		if !ok {
			id = nextID
			nextID++
		}
		tok.id = id
		if tok.normalized && norm != nil {
			if n := norm.normalize(tok.content, &sc); n != tok.content {
				a.decodeAs[id] = n
			}
		}
		a.byContent[tok.content] = id
		if tok.special {
			a.special[tok.content] = true
		}
		a.byID[id] = tok
	}
	var err error
	if a.raw, err = l.addedTrie(a, false); err != nil {
		return nil, err
	}
	if a.norm, err = l.addedTrie(a, true); err != nil {
		return nil, err
	}
	return a, nil
}

func sameFlags(a, b *addedToken) bool {
	return a.content == b.content && a.special == b.special && a.normalized == b.normalized &&
		a.lstrip == b.lstrip && a.rstrip == b.rstrip && a.singleWord == b.singleWord
}

// addedTrie builds the matcher of the normalized (or not) added tokens;
// nil when there are none.
func (l loader) addedTrie(a *addedVocab, normalized bool) (*trie, error) {
	ids := make([]int, 0, len(a.byID))
	for id, tok := range a.byID {
		if tok.normalized == normalized {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	var patterns []string
	var values []int32
	seen := map[string]int{}
	for _, id := range ids {
		p := a.byID[id].content
		if s, ok := a.decodeAs[id]; ok {
			p = s
		}
		if p == "" {
			continue // normalizes to nothing: it can never match
		}
		if other, dup := seen[p]; dup {
			return nil, l.errf("added_tokens", "tokens %q and %q both match the text %q", a.byID[other].content, a.byID[id].content, p)
		}
		seen[p] = id
		patterns = append(patterns, p)
		values = append(values, int32(id))
	}
	if len(patterns) == 0 {
		return nil, nil
	}
	return newTrie(patterns, values), nil
}
