package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// maxJSONDepth bounds the nesting of JSON read into template values.
const maxJSONDepth = 256

// jsonValue reads one JSON value into a template value, keeping object key
// order (Python's json.loads gives an insertion-ordered dict; Go maps, and
// jinja.FromGoValue, sort keys). Integers become ints (floats when they do
// not fit in int64), other numbers floats, as json.loads does.
func jsonValue(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readJSONValue(dec, 0)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("chat: JSON value followed by more data")
	}
	return v, nil
}

func readJSONValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > maxJSONDepth {
		return jinja.Undefined(), fmt.Errorf("chat: JSON nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("chat: read JSON: %w", err)
	}
	switch t := tok.(type) {
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(t), nil
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		return jsonNumber(t), nil
	case json.Delim:
		switch t {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := readJSONValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), fmt.Errorf("chat: read JSON: %w", err)
			}
			return jinja.NewList(items), nil
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), fmt.Errorf("chat: read JSON: %w", err)
				}
				key, ok := k.(string)
				if !ok {
					return jinja.Undefined(), fmt.Errorf("chat: read JSON: object key %v is not a string", k)
				}
				v, err := readJSONValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(key, v)
			}
			if _, err := dec.Token(); err != nil {
				return jinja.Undefined(), fmt.Errorf("chat: read JSON: %w", err)
			}
			return d, nil
		}
	}
	return jinja.Undefined(), fmt.Errorf("chat: read JSON: unexpected %v", tok)
}

func jsonNumber(n json.Number) jinja.Value {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return jinja.NewInt(i)
		}
	}
	f, _ := strconv.ParseFloat(s, 64) // ±Inf on overflow, as Python's float()
	return jinja.NewFloat(f)
}

// dumpOptions are Python json.dumps's keyword arguments.
type dumpOptions struct {
	ensureASCII bool
	indent      *string // nil: no newlines
	itemSep     string
	keySep      string
	sortKeys    bool
}

// pythonDumps is the default json.dumps(v, ensure_ascii=False) of
// transformers' tojson: ", " and ": " separators, key order kept.
func pythonDumps(v jinja.Value) (string, error) {
	return dumps(v, dumpOptions{itemSep: ", ", keySep: ": "})
}

// dumps writes v as Python's json.dumps does with o.
func dumps(v jinja.Value, o dumpOptions) (string, error) {
	var b strings.Builder
	if err := dumpValue(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func dumpValue(b *strings.Builder, v jinja.Value, o dumpOptions, level int) error {
	switch {
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pythonFloat(v.AsFloat()))
	case v.IsString():
		dumpString(b, v.AsString(), o.ensureASCII)
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		sep := o.itemSep + newlineIndent(o, level+1)
		b.WriteString(newlineIndent(o, level+1))
		for i, item := range items {
			if i > 0 {
				b.WriteString(sep)
			}
			if err := dumpValue(b, item, o, level+1); err != nil {
				return err
			}
		}
		b.WriteString(newlineIndent(o, level))
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := d.OrderedKeys()
		if o.sortKeys {
			slices.Sort(keys)
		}
		b.WriteByte('{')
		sep := o.itemSep + newlineIndent(o, level+1)
		b.WriteString(newlineIndent(o, level+1))
		for i, k := range keys {
			if i > 0 {
				b.WriteString(sep)
			}
			dumpString(b, k, o.ensureASCII)
			b.WriteString(o.keySep)
			val, _ := d.Get(k)
			if err := dumpValue(b, val, o, level+1); err != nil {
				return err
			}
		}
		b.WriteString(newlineIndent(o, level))
		b.WriteByte('}')
	default:
		return fmt.Errorf("tojson: Object of type %s is not JSON serializable", kindName(v))
	}
	return nil
}

func kindName(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return "Undefined"
	case v.IsCallable():
		return "function"
	}
	return "unknown"
}

func newlineIndent(o dumpOptions, level int) string {
	if o.indent == nil {
		return ""
	}
	return "\n" + strings.Repeat(*o.indent, level)
}

// dumpString writes s as a JSON string the way Python's json module does:
// only '"', '\\' and control characters are escaped (and, with ensureASCII,
// every non-ASCII character as \uXXXX, astral ones as surrogate pairs), with
// lowercase hex.
func dumpString(b *strings.Builder, s string, ensureASCII bool) {
	const hex = "0123456789abcdef"
	u4 := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				u4(r)
			case r < 0x7f || !ensureASCII:
				b.WriteRune(r)
			case r > 0xffff:
				r -= 0x10000
				u4(0xd800 | r>>10)
				u4(0xdc00 | r&0x3ff)
			default:
				u4(r)
			}
		}
	}
	b.WriteByte('"')
}

// pythonFloat is Python's repr(float): the shortest digits that round-trip,
// in positional notation with at least one fractional digit unless the
// decimal exponent is below -4 or above 15, then as d.ddde±XX.
func pythonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pythonJSON re-serialises JSON text as transformers' tojson writes it
// (Python's json.dumps with ensure_ascii=False, key order kept).
func pythonJSON(text string) (string, error) {
	if !utf8.ValidString(text) {
		return "", errors.New("chat: JSON text is not valid UTF-8")
	}
	v, err := jsonValue([]byte(text))
	if err != nil {
		return "", err
	}
	return pythonDumps(v)
}
