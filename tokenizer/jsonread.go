package tokenizer

import (
	"bytes"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON reader written for tokenizer.json: the generic values it
// builds (jv) serve the small components, while the model's vocab and
// merges, which are most of the bytes (11 MB for Qwen3, 33 MB for
// Gemma 3), are read straight into compact arenas (vocabData, mergesData)
// without a value per entry. Errors say where in the input they are.

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// jv is a parsed JSON value. Numbers keep their literal text in s.
type jv struct {
	kind jkind
	b    bool
	s    string
	arr  []jv
	obj  []jmember
}

type jmember struct {
	key string
	val jv
}

// get returns the member named key (the last one when it repeats, as a
// map would keep it), or nil.
func (v *jv) get(key string) *jv {
	if v.kind != jObject {
		return nil
	}
	for i := len(v.obj) - 1; i >= 0; i-- {
		if v.obj[i].key == key {
			return &v.obj[i].val
		}
	}
	return nil
}

const maxJSONDepth = 512

type jreader struct {
	file  string
	data  []byte
	pos   int
	depth int
}

func (r *jreader) syntaxErr(format string, args ...any) error {
	pos := min(r.pos, len(r.data))
	line := 1 + bytes.Count(r.data[:pos], []byte{'\n'})
	col := pos - bytes.LastIndexByte(r.data[:pos], '\n')
	return &LoadError{File: r.file, Msg: fmt.Sprintf("invalid JSON at line %d, column %d (byte %d): %s",
		line, col, pos, fmt.Sprintf(format, args...))}
}

func (r *jreader) skipWS() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte (0 at the end).
func (r *jreader) peek() byte {
	r.skipWS()
	if r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

func (r *jreader) expect(c byte) error {
	if r.peek() != c {
		return r.unexpected(fmt.Sprintf("%q", c))
	}
	r.pos++
	return nil
}

func (r *jreader) unexpected(want string) error {
	if r.pos >= len(r.data) {
		return r.syntaxErr("unexpected end of input, want %s", want)
	}
	return r.syntaxErr("unexpected %q, want %s", r.data[r.pos], want)
}

// document reads one whole JSON document; hook, when not nil, may take over
// the value of a member of the top-level object (it returns false to
// decline).
func (r *jreader) document(hook func(key string) (bool, error)) (jv, error) {
	var v jv
	var err error
	if hook != nil && r.peek() == '{' {
		v, err = r.object(hook)
	} else {
		v, err = r.value()
	}
	if err != nil {
		return jv{}, err
	}
	if r.peek() != 0 {
		return jv{}, r.syntaxErr("unexpected data after the top-level value")
	}
	return v, nil
}

func (r *jreader) value() (jv, error) {
	switch c := r.peek(); {
	case c == '{':
		return r.object(nil)
	case c == '[':
		return r.array()
	case c == '"':
		s, err := r.str()
		return jv{kind: jString, s: s}, err
	case c == '-' || c >= '0' && c <= '9':
		s, err := r.number()
		return jv{kind: jNumber, s: s}, err
	case c == 't':
		return jv{kind: jBool, b: true}, r.literal("true")
	case c == 'f':
		return jv{kind: jBool}, r.literal("false")
	case c == 'n':
		return jv{kind: jNull}, r.literal("null")
	default:
		return jv{}, r.unexpected("a JSON value")
	}
}

func (r *jreader) literal(word string) error {
	if !bytes.HasPrefix(r.data[r.pos:], []byte(word)) {
		return r.unexpected(word)
	}
	r.pos += len(word)
	return nil
}

func (r *jreader) enter() error {
	r.depth++
	if r.depth > maxJSONDepth {
		return r.syntaxErr("nesting deeper than %d", maxJSONDepth)
	}
	return nil
}

func (r *jreader) object(hook func(key string) (bool, error)) (jv, error) {
	if err := r.enter(); err != nil {
		return jv{}, err
	}
	defer func() { r.depth-- }()
	r.pos++ // '{'
	v := jv{kind: jObject}
	if r.peek() == '}' {
		r.pos++
		return v, nil
	}
	for {
		if r.peek() != '"' {
			return jv{}, r.unexpected("a member name")
		}
		key, err := r.str()
		if err != nil {
			return jv{}, err
		}
		if err := r.expect(':'); err != nil {
			return jv{}, err
		}
		taken := false
		if hook != nil {
			if taken, err = hook(key); err != nil {
				return jv{}, err
			}
		}
		if !taken {
			val, err := r.value()
			if err != nil {
				return jv{}, err
			}
			v.obj = append(v.obj, jmember{key: key, val: val})
		}
		switch r.peek() {
		case ',':
			r.pos++
		case '}':
			r.pos++
			return v, nil
		default:
			return jv{}, r.unexpected(`"," or "}"`)
		}
	}
}

func (r *jreader) array() (jv, error) {
	if err := r.enter(); err != nil {
		return jv{}, err
	}
	defer func() { r.depth-- }()
	r.pos++ // '['
	v := jv{kind: jArray}
	if r.peek() == ']' {
		r.pos++
		return v, nil
	}
	for {
		val, err := r.value()
		if err != nil {
			return jv{}, err
		}
		v.arr = append(v.arr, val)
		switch r.peek() {
		case ',':
			r.pos++
		case ']':
			r.pos++
			return v, nil
		default:
			return jv{}, r.unexpected(`"," or "]"`)
		}
	}
}

func (r *jreader) number() (string, error) {
	start := r.pos
	d := r.data
	i := r.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if !digits() {
		r.pos = i
		return "", r.unexpected("a digit")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			r.pos = i
			return "", r.unexpected("a digit")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			r.pos = i
			return "", r.unexpected("a digit")
		}
	}
	r.pos = i
	return string(d[start:i]), nil
}

// str reads a string value.
func (r *jreader) str() (string, error) {
	start := r.pos + 1
	for i := start; i < len(r.data); i++ {
		switch c := r.data[i]; {
		case c == '"':
			raw := r.data[start:i]
			if !utf8.Valid(raw) {
				r.pos = start
				return "", r.syntaxErr("invalid UTF-8 in a string")
			}
			r.pos = i + 1
			return string(raw), nil
		case c == '\\':
			b, err := r.appendStr(nil)
			return string(b), err
		case c < 0x20:
			r.pos = i
			return "", r.syntaxErr("control character in a string")
		}
	}
	r.pos = len(r.data)
	return "", r.syntaxErr("unexpected end of input in a string")
}

// appendStr reads a string value and appends its contents to dst.
func (r *jreader) appendStr(dst []byte) ([]byte, error) {
	d := r.data
	i := r.pos + 1
	runStart := i
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			if !utf8.Valid(d[runStart:i]) {
				r.pos = runStart
				return nil, r.syntaxErr("invalid UTF-8 in a string")
			}
			dst = append(dst, d[runStart:i]...)
			r.pos = i + 1
			return dst, nil
		case c < 0x20:
			r.pos = i
			return nil, r.syntaxErr("control character in a string")
		case c != '\\':
			i++
			continue
		}
		if !utf8.Valid(d[runStart:i]) {
			r.pos = runStart
			return nil, r.syntaxErr("invalid UTF-8 in a string")
		}
		dst = append(dst, d[runStart:i]...)
		if i+1 >= len(d) {
			r.pos = len(d)
			return nil, r.syntaxErr("unexpected end of input in a string")
		}
		switch e := d[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
			i += 2
		case 'b':
			dst = append(dst, '\b')
			i += 2
		case 'f':
			dst = append(dst, '\f')
			i += 2
		case 'n':
			dst = append(dst, '\n')
			i += 2
		case 'r':
			dst = append(dst, '\r')
			i += 2
		case 't':
			dst = append(dst, '\t')
			i += 2
		case 'u':
			r.pos = i
			u, ok := hex4(d, i+2)
			if !ok {
				return nil, r.syntaxErr("bad \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(rune(u)) {
				lo, ok := rune(-1), false
				if u < 0xDC00 && i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
					var l int
					l, ok = hex4(d, i+2)
					lo = rune(l)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return nil, r.syntaxErr("lone surrogate in a \\u escape")
				}
				i += 6
				dst = utf8.AppendRune(dst, utf16.DecodeRune(rune(u), lo))
			} else {
				dst = utf8.AppendRune(dst, rune(u))
			}
		default:
			r.pos = i
			return nil, r.syntaxErr("bad escape \\%c", e)
		}
		runStart = i
	}
	r.pos = len(d)
	return nil, r.syntaxErr("unexpected end of input in a string")
}

func hex4(d []byte, i int) (int, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	v := 0
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
