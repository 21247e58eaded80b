package wire

import (
	"encoding/json"
	"errors"
	"fmt"
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

// parseObject decodes b, which must be one JSON object.
func parseObject(b []byte) (obj, error) {
	v, err := parseJSON(b)
	if err != nil {
		return obj{}, fieldErr("body", "invalid JSON at %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, fieldErr("body", "got %s, want a JSON object", kind(v))
	}
	return obj{m: m}, nil
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
	case []any, numList:
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
	return litInt(path, string(n))
}

func litInt(path, s string) (int64, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fieldErr(path, "got %s, want an integer", s)
	}
	return int64(f), nil
}

func toFloat(path string, v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fieldErr(path, "got %s, want a number", kind(v))
	}
	return litFloat(path, string(n))
}

func litFloat(path, s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fieldErr(path, "got %s, want a finite number", s)
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
	l, err = asList(o.at(name), v)
	return l, err == nil, err
}

// asList returns a list value as []any.
func asList(path string, v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case numList:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = json.Number(s)
		}
		return l, nil
	}
	return nil, fieldErr(path, "got %s, want a list", kind(v))
}

// numbers returns a list of numbers; found is false when absent.
func (o obj) numbers(name string, required bool) (l numList, found bool, err error) {
	v, ok := o.get(name)
	if !ok {
		if required {
			return nil, false, o.missing(name, "a list of numbers")
		}
		return nil, false, nil
	}
	l, err = asNumbers(o.at(name), v)
	return l, err == nil, err
}

// asNumbers returns a list value whose elements are all numbers.
func asNumbers(path string, v any) (numList, error) {
	switch x := v.(type) {
	case numList:
		return x, nil
	case []any:
		for i, e := range x {
			if _, ok := e.(json.Number); !ok {
				return nil, fieldErr(index(path, i), "got %s, want a number", kind(e))
			}
		}
		return nil, fieldErr(path, "got a list of mixed values, want numbers") // unreachable: the parser makes numLists
	}
	return nil, fieldErr(path, "got %s, want a list of numbers", kind(v))
}

func asObject(path string, v any) (obj, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, fieldErr(path, "got %s, want an object", kind(v))
	}
	return obj{path: path, m: m}, nil
}

// ints decodes a list of integers.
func ints(path string, l numList) ([]int64, error) {
	out := make([]int64, len(l))
	for i, s := range l {
		x, err := litInt(path, s)
		if err != nil {
			return nil, fieldErr(index(path, i), "got %s, want an integer", s)
		}
		out[i] = x
	}
	return out, nil
}

// floats decodes a list of finite numbers.
func floats(path string, l numList) ([]float64, error) {
	out := make([]float64, len(l))
	for i, s := range l {
		x, err := litFloat(path, s)
		if err != nil {
			return nil, fieldErr(index(path, i), "got %s, want a finite number", s)
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
