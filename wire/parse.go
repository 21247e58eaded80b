package wire

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// parse decodes one JSON value into the tree the walker reads:
// map[string]any, []any, numList, json.Number, string, bool and nil.
// It accepts exactly what encoding/json accepts (a differential fuzz test
// checks this) but keeps lists of numbers as a numList of their literals,
// one allocation per list instead of one per number, which makes the
// large tensors of a training batch several times cheaper to decode.
//
// The tree's strings and number literals are substrings of one copy of b.
type parser struct {
	b     []byte
	s     string // b as a string, so literals are substrings, not copies
	i     int
	depth int
}

// numList is a JSON list whose elements are all numbers, kept as their literals.
type numList []string

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return "offset " + strconv.Itoa(e.off) + ": " + e.msg }

func parseJSON(b []byte) (any, error) {
	p := &parser{b: b, s: string(b)}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.b) {
		return nil, &syntaxError{p.i, "unexpected data after the JSON value"}
	}
	return v, nil
}

func (p *parser) fail(msg string) error { return &syntaxError{p.i, msg} }

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	p.space()
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		s, err := p.number()
		return json.Number(s), err
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.fail("invalid character " + strconv.QuoteRune(rune(p.b[p.i])))
}

func (p *parser) literal(word string) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.fail("invalid literal; want " + word)
	}
	p.i += len(word)
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.fail("JSON nested deeper than " + strconv.Itoa(MaxDepth) + " levels")
	}
	p.i++ // the opening bracket
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	m := map[string]any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("want a string key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("want ':' after a key")
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.space()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of input in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, nil
		default:
			return nil, p.fail("want ',' or '}' in an object")
		}
	}
}

// array returns a numList while every element is a number, else []any.
func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	nums := numList{}
	var vals []any // non-nil once a non-number appeared
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nums, nil
	}
	for {
		p.space()
		if vals == nil && p.i < len(p.b) && (p.b[p.i] == '-' || (p.b[p.i] >= '0' && p.b[p.i] <= '9')) {
			s, err := p.number()
			if err != nil {
				return nil, err
			}
			nums = append(nums, s)
		} else {
			if vals == nil {
				vals = make([]any, len(nums), len(nums)+1)
				for i, s := range nums {
					vals[i] = json.Number(s)
				}
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
		p.space()
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of input in a list")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			if vals != nil {
				return vals, nil
			}
			return nums, nil
		default:
			return nil, p.fail("want ',' or ']' in a list")
		}
	}
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? and returns
// its literal.
func (p *parser) number() (string, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return "", p.fail("invalid number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", p.fail("invalid number: no digits after '.'")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", p.fail("invalid number: no digits in the exponent")
		}
	}
	return p.s[start:p.i], nil
}

// str scans a string. Plain ones are copied as they are; ones with escapes
// or invalid UTF-8 go through encoding/json, so both decode the same.
func (p *parser) str() (string, error) {
	start := p.i
	p.i++ // opening quote
	plain := true
	for {
		if p.i >= len(p.b) {
			return "", &syntaxError{start, "unterminated string"}
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			raw := p.s[start+1 : p.i-1]
			if plain && utf8.ValidString(raw) {
				return raw, nil
			}
			var s string
			if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
				return "", &syntaxError{start, "invalid string: " + err.Error()}
			}
			return s, nil
		case c == '\\':
			plain = false
			p.i += 2
		case c < 0x20:
			return "", p.fail("control character in a string")
		default:
			p.i++
		}
	}
}
