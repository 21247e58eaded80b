package tokenizer

import "fmt"

// Post-processors, as the crate runs them: each sees the list of
// encodings the one before it made (at first the encoded sequence alone)
// and passes a list on; Encode concatenates the last list. A
// TemplateProcessing makes one encoding per piece of its template, so a
// processor after it in a Sequence sees several (a BertProcessing then
// treats the second as a pair). Every encoding here is a template over
// the one encoded sequence, so the whole chain reduces, at load, to one
// template for Encode with special tokens and one without.

// postStep maps a list of encodings to the next; add is Encode's
// AddSpecialTokens.
type postStep func(encs []template, add bool) ([]template, error)

// tmplPiece is one piece of a TemplateProcessing template: sequence A
// (seq 0), sequence B (seq 1), or special-token ids (seq -1).
type tmplPiece struct {
	seq int
	ids []int
}

// reduce runs the steps on the encoded sequence and returns the ids
// template of the result, nil when it is the sequence unchanged.
func reduce(steps []postStep, add bool) (template, error) {
	encs := []template{{{seq: true}}}
	for _, step := range steps {
		var err error
		if encs, err = step(encs, add); err != nil {
			return nil, err
		}
	}
	var out template
	for _, e := range encs {
		out = append(out, e...)
	}
	if len(out) == 1 && out[0].seq {
		return nil, nil
	}
	return out, nil
}

// wrapStep is BertProcessing (prefix nil for the pair) and
// RobertaProcessing: the first encoding becomes cls + it + sep, each
// other one pairPrefix + it + sep.
func wrapStep(cls, sep int, roberta bool) postStep {
	return func(encs []template, add bool) ([]template, error) {
		if !add {
			return encs, nil
		}
		out := make([]template, len(encs))
		for i, e := range encs {
			var t template
			switch {
			case i == 0:
				t = append(t, templateItem{ids: []int{cls}})
			case roberta:
				t = append(t, templateItem{ids: []int{sep}})
			}
			t = append(append(t, e...), templateItem{ids: []int{sep}})
			out[i] = t
		}
		return out, nil
	}
}

// templateStep is TemplateProcessing: the single template for one
// encoding, the pair template for two.
func templateStep(single, pair []tmplPiece, path string) postStep {
	return func(encs []template, add bool) ([]template, error) {
		var pieces []tmplPiece
		switch len(encs) {
		case 1:
			pieces = single
		case 2:
			pieces = pair
		default:
			return nil, &LoadError{File: tokenizerFile, Path: path, Unsupported: true,
				Msg: fmt.Sprintf("a TemplateProcessing after processors that made %d sequences", len(encs))}
		}
		var out []template
		for _, p := range pieces {
			switch {
			case p.seq < 0 && add:
				out = append(out, template{{ids: p.ids}})
			case p.seq < 0:
			case p.seq >= len(encs):
				return nil, &LoadError{File: tokenizerFile, Path: join(path, "single"), Unsupported: true,
					Msg: "the single template uses sequence B"}
			default:
				out = append(out, encs[p.seq])
			}
		}
		return out, nil
	}
}

var supportedPostProcessors = []string{"TemplateProcessing", "ByteLevel", "RobertaProcessing", "BertProcessing", "Sequence"}

// postProcessor reads the post-processor (flattening sequences) into
// steps.
func (l loader) postProcessor(dst []postStep, v *jv, path string) ([]postStep, error) {
	if isNull(v) {
		return dst, nil
	}
	typ, err := l.typeOf(v, path)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "ByteLevel":
		return dst, nil // it only trims offsets
	case "Sequence":
		list, err := l.list(v, "processors", path)
		if err != nil {
			return nil, err
		}
		for i := range list {
			if dst, err = l.postProcessor(dst, &list[i], index(join(path, "processors"), i)); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case "RobertaProcessing", "BertProcessing":
		cls, err := l.namedID(v, "cls", path)
		if err != nil {
			return nil, err
		}
		sep, err := l.namedID(v, "sep", path)
		if err != nil {
			return nil, err
		}
		return append(dst, wrapStep(cls, sep, typ == "RobertaProcessing")), nil
	case "TemplateProcessing":
		step, err := l.templateProcessing(v, path)
		if err != nil {
			return nil, err
		}
		return append(dst, step), nil
	}
	return nil, l.unknownType(path, typ, supportedPostProcessors)
}

// namedID reads a ["token", id] member.
func (l loader) namedID(v *jv, key, path string) (int, error) {
	m := v.get(key)
	if m == nil {
		return 0, l.errf(path, "missing %q", key)
	}
	if m.kind != jArray || len(m.arr) != 2 || m.arr[0].kind != jString {
		return 0, l.errf(join(path, key), `want ["token", id]`)
	}
	return l.uintValue(&m.arr[1], index(join(path, key), 1))
}

func (l loader) templateProcessing(v *jv, path string) (postStep, error) {
	specials := map[string][]int{}
	if st := v.get("special_tokens"); !isNull(st) {
		if err := l.object(st, join(path, "special_tokens")); err != nil {
			return nil, err
		}
		for _, m := range st.obj {
			p := join(join(path, "special_tokens"), m.key)
			if err := l.object(&m.val, p); err != nil {
				return nil, err
			}
			idList, err := l.list(&m.val, "ids", p)
			if err != nil {
				return nil, err
			}
			toks, err := l.list(&m.val, "tokens", p)
			if err != nil {
				return nil, err
			}
			if len(toks) != len(idList) {
				return nil, l.errf(p, "ids and tokens must be of the same length")
			}
			ids := make([]int, len(idList))
			for i := range idList {
				if ids[i], err = l.uintValue(&idList[i], index(join(p, "ids"), i)); err != nil {
					return nil, err
				}
			}
			specials[m.key] = ids
		}
	}
	single, err := l.templatePieces(v, "single", path, specials)
	if err != nil {
		return nil, err
	}
	pair, err := l.templatePieces(v, "pair", path, specials)
	if err != nil {
		return nil, err
	}
	return templateStep(single, pair, path), nil
}

func (l loader) templatePieces(v *jv, key, path string, specials map[string][]int) ([]tmplPiece, error) {
	m := v.get(key)
	if isNull(m) {
		return []tmplPiece{{seq: 0}}, nil
	}
	p := join(path, key)
	if m.kind != jArray {
		return nil, l.errf(p, "want an array of pieces, got %s", m.kind)
	}
	var out []tmplPiece
	for i := range m.arr {
		ip := index(p, i)
		e := &m.arr[i]
		if e.kind != jObject || len(e.obj) != 1 || e.obj[0].val.kind != jObject {
			return nil, l.errf(ip, `want {"SpecialToken": {...}} or {"Sequence": {...}}`)
		}
		body := &e.obj[0].val
		switch e.obj[0].key {
		case "SpecialToken":
			id, err := l.str(body, "id", join(ip, "SpecialToken"))
			if err != nil {
				return nil, err
			}
			ids, ok := specials[id]
			if !ok {
				return nil, l.errf(join(ip, "SpecialToken"), "special token %q is not in special_tokens", id)
			}
			out = append(out, tmplPiece{seq: -1, ids: ids})
		case "Sequence":
			id, err := l.str(body, "id", join(ip, "Sequence"))
			if err != nil {
				return nil, err
			}
			switch id {
			case "A":
				out = append(out, tmplPiece{seq: 0})
			case "B":
				out = append(out, tmplPiece{seq: 1})
			default:
				return nil, l.errf(join(join(ip, "Sequence"), "id"), `want "A" or "B", got %q`, id)
			}
		default:
			return nil, l.errf(ip, `want {"SpecialToken": {...}} or {"Sequence": {...}}, got key %q`, e.obj[0].key)
		}
	}
	return out, nil
}
