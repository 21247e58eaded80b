package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// ErrBadRequest is matched (errors.Is) by every decoding error: the input
// was not a well-formed message of the expected kind.
var ErrBadRequest = errors.New("wire: bad request")

// FieldError reports a problem with one field of a message. Field is a
// dotted path with list indices, e.g. "forward_backward_input.data[2].model_input";
// "body" names the message as a whole.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return "field " + e.Field + ": " + e.Problem }

// Is makes every FieldError match ErrBadRequest.
func (e *FieldError) Is(target error) bool { return target == ErrBadRequest }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// MaxDepth bounds the nesting of a decoded JSON document.
const MaxDepth = 64

// obj is a decoded JSON object and the path that leads to it. Unknown keys
// are ignored; null means absent for optional fields.
type obj struct {
	path string
	m    map[string]any
}

// parseObject decodes b (one JSON object, numbers kept as json.Number).
func parseObject(b []byte) (obj, error) {
	if err := checkDepth(b); err != nil {
		return obj{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return obj{}, fieldErr("body", "invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return obj{}, fieldErr("body", "unexpected data after the JSON object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, fieldErr("body", "got %s, want a JSON object", kind(v))
	}
	return obj{m: m}, nil
}

// checkDepth rejects documents nested deeper than MaxDepth before the
// decoder recurses into them.
func checkDepth(b []byte) error {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > MaxDepth {
				return fieldErr("body", "JSON nested deeper than %d levels", MaxDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func (o obj) at(name string) string { return join(o.path, name) }

// get returns the value of name, or nil and false when absent or null.
func (o obj) get(name string) (any, bool) {
	v, ok := o.m[name]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func (o obj) missing(name, want string) error {
	return fieldErr(o.at(name), "missing; want %s", want)
}

// str returns a string field; required reports an error when absent.
func (o obj) str(name string, required bool) (string, error) {
	v, ok := o.get(name)
	if !ok {
		if required {
			return "", o.missing(name, "a string")
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fieldErr(o.at(name), "got %s, want a string", kind(v))
	}
	return s, nil
}

// literal checks a discriminator such as "type": absent is fine (the SDK
// leaves defaults out), any other value than want is an error.
func (o obj) literal(name, want string) error {
	s, err := o.str(name, false)
	if err != nil {
		return err
	}
	if s != "" && s != want {
		return fieldErr(o.at(name), "got %q, want %q", s, want)
	}
	return nil
}

// toInt converts a JSON number holding an integer (1, 1.0, 1e3) to int64.
func toInt(path string, v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fieldErr(path, "got %s, want an integer", kind(v))
	}
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fieldErr(path, "got %s, want an integer", n.String())
	}
	return int64(f), nil
}

func toFloat(path string, v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fieldErr(path, "got %s, want a number", kind(v))
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fieldErr(path, "got %s, want a finite number", n.String())
	}
	return f, nil
}

// optInt returns an integer field or nil when absent.
func (o obj) optInt(name string) (*int64, error) {
	v, ok := o.get(name)
	if !ok {
		return nil, nil
	}
	i, err := toInt(o.at(name), v)
	if err != nil {
		return nil, err
	}
	return &i, nil
}

// integer returns an integer field, def when absent; required makes absence an error.
func (o obj) integer(name string, def int64, required bool) (int64, error) {
	p, err := o.optInt(name)
	if err != nil {
		return 0, err
	}
	if p == nil {
		if required {
			return 0, o.missing(name, "an integer")
		}
		return def, nil
	}
	return *p, nil
}

// number returns a float field, def when absent.
func (o obj) number(name string, def float64) (float64, error) {
	v, ok := o.get(name)
	if !ok {
		return def, nil
	}
	return toFloat(o.at(name), v)
}

// boolean returns a bool field, def when absent.
func (o obj) boolean(name string, def bool) (bool, error) {
	v, ok := o.get(name)
	if !ok {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fieldErr(o.at(name), "got %s, want true or false", kind(v))
	}
	return b, nil
}

// object returns a nested object; found is false when absent.
func (o obj) object(name string, required bool) (sub obj, found bool, err error) {
	v, ok := o.get(name)
	if !ok {
		if required {
			return obj{}, false, o.missing(name, "an object")
		}
		return obj{}, false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, false, fieldErr(o.at(name), "got %s, want an object", kind(v))
	}
	return obj{path: o.at(name), m: m}, true, nil
}

// list returns a nested list; found is false when absent.
func (o obj) list(name string, required bool) (l []any, found bool, err error) {
	v, ok := o.get(name)
	if !ok {
		if required {
			return nil, false, o.missing(name, "a list")
		}
		return nil, false, nil
	}
	l, ok = v.([]any)
	if !ok {
		return nil, false, fieldErr(o.at(name), "got %s, want a list", kind(v))
	}
	return l, true, nil
}

func asObject(path string, v any) (obj, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, fieldErr(path, "got %s, want an object", kind(v))
	}
	return obj{path: path, m: m}, nil
}

// ints decodes a list of integers.
func ints(path string, l []any) ([]int64, error) {
	out := make([]int64, len(l))
	for i, v := range l {
		x, err := toInt(index(path, i), v)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// floats decodes a list of finite numbers.
func floats(path string, l []any) ([]float64, error) {
	out := make([]float64, len(l))
	for i, v := range l {
		x, err := toFloat(index(path, i), v)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// floatMap decodes an object of numbers, e.g. metrics or loss_fn_config.
func floatMap(o obj) (map[string]float64, error) {
	out := make(map[string]float64, len(o.m))
	for k, v := range o.m {
		f, err := toFloat(o.at(k), v)
		if err != nil {
			return nil, err
		}
		out[k] = f
	}
	return out, nil
}

// tokenID checks one token id: a non-negative 32-bit integer.
func tokenID(path string, v int64) (int, error) {
	if v < 0 || v > math.MaxInt32 {
		return 0, fieldErr(path, "token id %d out of range; want 0 ≤ id < 2^31", v)
	}
	return int(v), nil
}
