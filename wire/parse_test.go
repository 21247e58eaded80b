package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdTree decodes b with encoding/json the way the walker used to: numbers
// as json.Number.
func stdTree(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// Unmarshal checks the rest is only whitespace.
	var probe any
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, err
	}
	return v, nil
}

// plain turns numLists into []any of json.Number, for comparison.
func plain(v any) any {
	switch x := v.(type) {
	case numList:
		l, _ := asList("", x)
		return l
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	}
	return v
}

func TestParseMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range append(seeds,
		`{"a":"\u00e9\ud83d\ude00\n","b":[1,"x",null,true,false,{"c":[]}],"a":2}`,
		`[-0,0.5e-3,1E+2,12345678901234567890]`, " \t\n[ ]\n", `"\xff"`, `{"k":"a\"b"}`,
		`[1,]`, `{"a":1,}`, `01`, `1.`, `-`, `1e`, `[1 2]`, `{"a" 1}`, `"\x01"`, `tru`, `nul`,
	) {
		checkParse(t, []byte(s))
	}
}

func checkParse(t *testing.T, b []byte) {
	t.Helper()
	ours, err := parseJSON(b)
	if err != nil && strings.Contains(err.Error(), "nested deeper") {
		return
	}
	std, stdErr := stdTree(b)
	require.Equal(t, stdErr == nil, err == nil, "input %q: ours %v, encoding/json %v", b, err, stdErr)
	if err == nil {
		assert.True(t, reflect.DeepEqual(std, plain(ours)), "input %q: ours %#v, encoding/json %#v", b, plain(ours), std)
	}
}

// FuzzParse checks the parser against encoding/json on arbitrary input:
// both accept the same documents and build the same tree.
func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkParse(t, b) })
}
