package tokenizer

import (
	"golang.org/x/text/unicode/norm"
)

var (
	supportedNormalizers = []string{"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents",
		"Nmt", "Prepend", "Replace", "ByteLevel", "Sequence"}
	supportedPreTokenizers = []string{"Split", "ByteLevel", "Metaspace", "Digits", "Whitespace",
		"WhitespaceSplit", "Punctuation", "BertPreTokenizer", "CharDelimiterSplit", "Sequence"}
	supportedDecoders = []string{"ByteLevel", "Metaspace", "ByteFallback", "Fuse", "Strip", "Replace",
		"BPEDecoder", "Sequence"}
)

func isNull(v *jv) bool { return v == nil || v.kind == jNull }

// pattern reads a {"String": ...} or {"Regex": ...} pattern member.
func (l loader) pattern(v *jv, path string) (finder, error) {
	path = join(path, "pattern")
	p := v.get("pattern")
	if p == nil {
		return nil, l.errf(path, "missing")
	}
	if p.kind != jObject || len(p.obj) != 1 || p.obj[0].val.kind != jString {
		return nil, l.errf(path, `want {"String": "..."} or {"Regex": "..."}`)
	}
	switch m := p.obj[0]; m.key {
	case "String":
		return literalFinder{m.val.s}, nil
	case "Regex":
		f, err := compileRegex(m.val.s, l.noFast)
		if err != nil {
			return nil, l.errf(join(path, "Regex"), "cannot compile %q: %v", m.val.s, err)
		}
		return f, nil
	default:
		return nil, l.errf(path, `want {"String": "..."} or {"Regex": "..."}, got key %q`, m.key)
	}
}

func (l loader) normalizer(v *jv, path string) (normalizer, error) {
	if isNull(v) {
		return nil, nil
	}
	typ, err := l.typeOf(v, path)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "NFC":
		return unicodeNorm{norm.NFC}, nil
	case "NFD":
		return unicodeNorm{norm.NFD}, nil
	case "NFKC":
		return unicodeNorm{norm.NFKC}, nil
	case "NFKD":
		return unicodeNorm{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "StripAccents":
		return stripAccents{}, nil
	case "Nmt":
		return nmt{}, nil
	case "ByteLevel":
		return byteLevelNorm{}, nil
	case "Strip":
		var s strip
		if s.left, err = l.boolean(v, "strip_left", path, true); err != nil {
			return nil, err
		}
		if s.right, err = l.boolean(v, "strip_right", path, true); err != nil {
			return nil, err
		}
		return s, nil
	case "Prepend":
		p, err := l.str(v, "prepend", path)
		return prepend{p}, err
	case "Replace":
		f, err := l.pattern(v, path)
		if err != nil {
			return nil, err
		}
		c, err := l.str(v, "content", path)
		return replace{f, c}, err
	case "Sequence":
		list, err := l.list(v, "normalizers", path)
		if err != nil {
			return nil, err
		}
		var seq normSequence
		for i := range list {
			n, err := l.normalizer(&list[i], index(join(path, "normalizers"), i))
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		switch len(seq) {
		case 0:
			return nil, nil
		case 1:
			return seq[0], nil
		}
		return seq, nil
	}
	return nil, l.unknownType(path, typ, supportedNormalizers, "BertNormalizer", "Bert", "Precompiled")
}

// preTokenizer builds the pre-tokenizer, flattening sequences. A final
// ByteLevel leaves its byte mapping to the model (byteInput), which then
// caches and merges words by their raw text.
func (l loader) preTokenizer(v *jv, path string) (preTokenizer, bool, error) {
	if isNull(v) {
		return nil, false, nil
	}
	list, err := l.preTokenizers(nil, v, path)
	if err != nil {
		return nil, false, err
	}
	byteInput := false
	if n := len(list); n > 0 {
		if bl, ok := list[n-1].(*byteLevelPre); ok {
			bl.final, byteInput = true, true
			if !bl.addPrefixSpace && bl.regex == nil {
				list = list[:n-1] // nothing left for it to do
			}
		}
	}
	switch len(list) {
	case 0:
		return nil, byteInput, nil
	case 1:
		return list[0], byteInput, nil
	}
	return preSequence(list), byteInput, nil
}

func (l loader) preTokenizers(dst []preTokenizer, v *jv, path string) ([]preTokenizer, error) {
	typ, err := l.typeOf(v, path)
	if err != nil {
		return nil, err
	}
	var p preTokenizer
	switch typ {
	case "Sequence":
		list, err := l.list(v, "pretokenizers", path)
		if err != nil {
			return nil, err
		}
		for i := range list {
			if isNull(&list[i]) {
				return nil, l.errf(index(join(path, "pretokenizers"), i), "want a pre-tokenizer, got null")
			}
			if dst, err = l.preTokenizers(dst, &list[i], index(join(path, "pretokenizers"), i)); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case "Split":
		f, err := l.pattern(v, path)
		if err != nil {
			return nil, err
		}
		b, err := l.behavior(v, path, nil)
		if err != nil {
			return nil, err
		}
		inv, err := l.boolean(v, "invert", path, false)
		if err != nil {
			return nil, err
		}
		p = splitter{pattern: f, behavior: b, invert: inv}
	case "ByteLevel":
		bl := &byteLevelPre{}
		if bl.addPrefixSpace, err = l.boolean(v, "add_prefix_space", path, true); err != nil {
			return nil, err
		}
		useRegex, err := l.boolean(v, "use_regex", path, true)
		if err != nil {
			return nil, err
		}
		if useRegex {
			f, err := compileRegex(gpt2Pattern, l.noFast)
			if err != nil {
				return nil, err
			}
			bl.regex = f
		}
		p = bl
	case "Metaspace":
		m, err := l.metaspace(v, path)
		if err != nil {
			return nil, err
		}
		p = &metaspacePre{repl: string(m.repl), scheme: m.scheme, doSplit: m.split}
	case "Digits":
		ind, err := l.boolean(v, "individual_digits", path, false)
		if err != nil {
			return nil, err
		}
		b := contiguous
		if ind {
			b = isolated
		}
		p = splitter{pattern: runeFinder{isRustNumeric}, behavior: b}
	case "Whitespace":
		p = splitter{pattern: wordRunFinder{}, behavior: removed, invert: true}
	case "WhitespaceSplit":
		p = splitter{pattern: runeFinder{isRustWhitespace}, behavior: removed}
	case "Punctuation":
		b, err := l.behavior(v, path, &defaultIsolated)
		if err != nil {
			return nil, err
		}
		p = splitter{pattern: runeFinder{isPunctuation}, behavior: b}
	case "BertPreTokenizer":
		dst = append(dst, splitter{pattern: runeFinder{isRustWhitespace}, behavior: removed})
		p = splitter{pattern: runeFinder{isPunctuation}, behavior: isolated}
	case "CharDelimiterSplit":
		d, err := l.char(v, "delimiter", path, -1)
		if err != nil {
			return nil, err
		}
		if d < 0 {
			return nil, l.errf(path, `missing "delimiter"`)
		}
		p = splitter{pattern: literalFinder{string(d)}, behavior: removed}
	default:
		return nil, l.unknownType(path, typ, supportedPreTokenizers, "UnicodeScripts", "FixedLength")
	}
	return append(dst, p), nil
}

var defaultIsolated = isolated

// behavior reads a SplitDelimiterBehavior member; def nil: required.
func (l loader) behavior(v *jv, path string, def *behavior) (behavior, error) {
	m := v.get("behavior")
	if m == nil && def != nil {
		return *def, nil
	}
	if m == nil {
		return 0, l.errf(path, `missing "behavior"`)
	}
	if m.kind == jString {
		if b, ok := behaviors[m.s]; ok {
			return b, nil
		}
	}
	return 0, l.errf(join(path, "behavior"), "want one of Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous, got %s", describeStr(m))
}

func describeStr(v *jv) string {
	if v.kind == jString {
		return "\"" + v.s + "\""
	}
	return describe(v)
}

type metaspaceJSON struct {
	repl   rune
	scheme prependScheme
	split  bool
}

// metaspace reads a Metaspace pre-tokenizer or decoder, with Hugging
// Face's reading of the legacy add_prefix_space.
func (l loader) metaspace(v *jv, path string) (metaspaceJSON, error) {
	var m metaspaceJSON
	var err error
	if m.repl, err = l.char(v, "replacement", path, -1); err != nil {
		return m, err
	}
	if m.repl < 0 {
		return m, l.errf(path, `missing "replacement"`)
	}
	scheme, ok, err := l.optStr(v, "prepend_scheme", path)
	if err != nil {
		return m, err
	}
	switch {
	case !ok || scheme == "always":
		m.scheme = prependAlways
	case scheme == "first":
		m.scheme = prependFirst
	case scheme == "never":
		m.scheme = prependNever
	default:
		return m, l.errf(join(path, "prepend_scheme"), `want "always", "first" or "never", got %q`, scheme)
	}
	if aps := v.get("add_prefix_space"); aps != nil && aps.kind == jBool && !aps.b {
		if m.scheme != prependNever {
			return m, l.errf(join(path, "add_prefix_space"), "add_prefix_space false does not match prepend_scheme")
		}
	}
	if m.split, err = l.boolean(v, "split", path, true); err != nil {
		return m, err
	}
	return m, nil
}

func (l loader) decoder(v *jv, path string) ([]decoder, error) {
	typ, err := l.typeOf(v, path)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "Sequence":
		list, err := l.list(v, "decoders", path)
		if err != nil {
			return nil, err
		}
		var out []decoder
		for i := range list {
			d, err := l.decoder(&list[i], index(join(path, "decoders"), i))
			if err != nil {
				return nil, err
			}
			out = append(out, d...)
		}
		return out, nil
	case "ByteLevel":
		return []decoder{byteLevelDec{}}, nil
	case "ByteFallback":
		return []decoder{byteFallbackDec{}}, nil
	case "Fuse":
		return []decoder{fuseDec{}}, nil
	case "Metaspace":
		m, err := l.metaspace(v, path)
		return []decoder{metaspaceDec{repl: m.repl, scheme: m.scheme}}, err
	case "Strip":
		var d stripDec
		if d.content, err = l.char(v, "content", path, ' '); err != nil {
			return nil, err
		}
		if d.start, err = l.uint(v, "start", path, 0); err != nil {
			return nil, err
		}
		if d.stop, err = l.uint(v, "stop", path, 0); err != nil {
			return nil, err
		}
		return []decoder{d}, nil
	case "Replace":
		f, err := l.pattern(v, path)
		if err != nil {
			return nil, err
		}
		c, err := l.str(v, "content", path)
		return []decoder{replaceDec{f, c}}, err
	case "BPEDecoder":
		s, ok, err := l.optStr(v, "suffix", path)
		if !ok {
			s = "</w>"
		}
		return []decoder{bpeDec{s}}, err
	}
	return nil, l.unknownType(path, typ, supportedDecoders, "WordPiece", "CTC")
}
