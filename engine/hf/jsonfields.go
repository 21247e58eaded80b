package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// fields reads one JSON object of a config file key by key, remembering
// which keys were read so the caller can reject the rest.
type fields struct {
	file   string // base name of the file, for errors
	prefix string // "rope_scaling." inside a nested object
	m      map[string]any
	used   map[string]bool
}

// decodeObject parses data as a JSON object with numbers kept exact.
func decodeObject(file string, data []byte) (*fields, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &ConfigError{File: file, Msg: fmt.Sprintf("not valid JSON: %v", err)}
	}
	if dec.More() {
		return nil, &ConfigError{File: file, Msg: "trailing data after the JSON object"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &ConfigError{File: file, Msg: fmt.Sprintf("want a JSON object, got %s", kindOf(v))}
	}
	return &fields{file: file, m: m, used: map[string]bool{}}, nil
}

// errf is a *ConfigError about key k holding value v.
func (f *fields) errf(k string, v any, format string, a ...any) error {
	return &ConfigError{File: f.file, Field: f.prefix + k, Value: show(v), Msg: fmt.Sprintf(format, a...)}
}

// present reports whether k is there and not null (and marks it read).
func (f *fields) present(k string) bool {
	v, ok := f.m[k]
	f.used[k] = true
	return ok && v != nil
}

func (f *fields) raw(k string) any {
	f.used[k] = true
	return f.m[k]
}

// integer reads k as an integer; absent or null gives def.
func (f *fields) integer(k string, def int) (int, error) {
	v := f.raw(k)
	if v == nil {
		return def, nil
	}
	n, ok := asInt(v)
	if !ok {
		return 0, f.errf(k, v, "want an integer")
	}
	return n, nil
}

// required reads k as an integer that must be present.
func (f *fields) required(k string) (int, error) {
	if !f.present(k) {
		return 0, f.errf(k, nil, "missing; it is required")
	}
	return f.integer(k, 0)
}

// number reads k as a finite number; absent or null gives def.
func (f *fields) number(k string, def float64) (float64, error) {
	v := f.raw(k)
	if v == nil {
		return def, nil
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, f.errf(k, v, "want a number")
	}
	x, err := num.Float64()
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, f.errf(k, v, "want a finite number")
	}
	return x, nil
}

// boolean reads k as a boolean; absent or null gives def.
func (f *fields) boolean(k string, def bool) (bool, error) {
	v := f.raw(k)
	if v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, f.errf(k, v, "want true or false")
	}
	return b, nil
}

// str reads k as a string; absent or null gives def.
func (f *fields) str(k, def string) (string, error) {
	v := f.raw(k)
	if v == nil {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", f.errf(k, v, "want a string")
	}
	return s, nil
}

// intSet reads k as an integer or a list of integers (eos_token_id);
// absent or null gives nil.
func (f *fields) intSet(k string) ([]int, error) {
	v := f.raw(k)
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]int, 0, len(x))
		for _, e := range x {
			n, ok := asInt(e)
			if !ok {
				return nil, f.errf(k, v, "want an integer or a list of integers")
			}
			out = append(out, n)
		}
		return out, nil
	}
	n, ok := asInt(v)
	if !ok {
		return nil, f.errf(k, v, "want an integer or a list of integers")
	}
	return []int{n}, nil
}

// object reads k as a nested object; absent or null gives nil.
func (f *fields) object(k string) (*fields, error) {
	v := f.raw(k)
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, f.errf(k, v, "want a JSON object or null")
	}
	return &fields{file: f.file, prefix: f.prefix + k + ".", m: m, used: map[string]bool{}}, nil
}

// unread returns the keys not read yet, sorted.
func (f *fields) unread() []string {
	var out []string
	for k := range f.m {
		if !f.used[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// truthy reports whether a JSON value is something other than null, false,
// zero, "" or an empty list or object.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// asInt converts a JSON number holding an integer (1, 1.0, 1e3) that fits
// in 32 bits.
func asInt(v any) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if n, err := num.Int64(); err == nil {
		if n < math.MinInt32 || n > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	}
	x, err := num.Float64()
	if err != nil || x != math.Trunc(x) || x < math.MinInt32 || x > math.MaxInt32 {
		return 0, false
	}
	return int(x), true
}

func kindOf(v any) string {
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
	}
	return "an object"
}

// show renders a JSON value for an error message, shortened.
func show(v any) string {
	if v == nil {
		return ""
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// oneOf formats a list of accepted values.
func oneOf(vals ...string) string { return strings.Join(vals, ", ") }
