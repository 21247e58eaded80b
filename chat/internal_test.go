package chat

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPythonFloat(t *testing.T) {
	// repr(float) in CPython.
	tenth := 0.1 // a variable: constant 0.1 + 0.2 is exactly 0.3
	for f, want := range map[float64]string{
		1: "1.0", 1e16: "1e+16", 1e15: "1000000000000000.0", 1e-4: "0.0001", 1e-5: "1e-05",
		tenth + 0.2: "0.30000000000000004", 1.5e300: "1.5e+300", math.Copysign(0, -1): "-0.0", 0: "0.0",
		5e-324: "5e-324", math.MaxFloat64: "1.7976931348623157e+308", 123456789.125: "123456789.125",
		-2.5e-7: "-2.5e-07", 12345678901234567: "1.2345678901234568e+16", math.Inf(1): "Infinity",
	} {
		assert.Equal(t, want, pythonFloat(f), "%v", f)
	}
	// Property: the text reads back as the same float.
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		got, err := strconv.ParseFloat(pythonFloat(f), 64)
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
}

func TestDumpString(t *testing.T) {
	var b strings.Builder
	dumpString(&b, "a\"\\\n\r\t\b\f\x01\x7f é\u2028😀", false)
	assert.Equal(t, `"a\"\\\n\r\t\b\f\u0001`+"\x7f é\u2028😀"+`"`, b.String())
	b.Reset()
	dumpString(&b, "\x7f é😀", true)
	assert.Equal(t, `"\u007f \u00e9\ud83d\ude00"`, b.String())
}

func TestJSONValueKeepsOrderAndNumbers(t *testing.T) {
	v, err := jsonValue([]byte(`{"z": 1, "a": [1.0, 2, 1e2, 99999999999999999999, null, true, "s"], "m": {}}`))
	require.NoError(t, err)
	s, err := pythonDumps(v)
	require.NoError(t, err)
	// json.dumps(json.loads(...)) in Python: the big integer would stay an
	// int there; here it becomes a float (documented).
	assert.Equal(t, `{"z": 1, "a": [1.0, 2, 100.0, 1e+20, null, true, "s"], "m": {}}`, s)

	deep := strings.Repeat("[", maxJSONDepth+2) + strings.Repeat("]", maxJSONDepth+2)
	_, err = jsonValue([]byte(deep))
	assert.ErrorContains(t, err, "deeper")
	for _, bad := range []string{``, `{`, `{"a" 1}`, `[1,]`, `1 2`, `{1: 2}`} {
		_, err := jsonValue([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestRewriteFilters(t *testing.T) {
	for src, want := range map[string]string{
		`{{ x | tojson }}`:                      `{{ x | tandem_tojson }}`,
		`{{ x|tojson(indent=2)|trim }}`:         `{{ x|tandem_tojson(indent=2)|tandem_trim }}`,
		`{% set y = x | tojson %}`:              `{% set y = x | tandem_tojson %}`,
		`{{ "a | tojson" ~ 'b | trim' }}`:       `{{ "a | tojson" ~ 'b | trim' }}`,
		`{{ "it\"s | tojson" }}`:                `{{ "it\"s | tojson" }}`,
		`{# x | tojson #}text | tojson`:         `{# x | tojson #}text | tojson`,
		`{% raw %}{{ x | tojson }}{% endraw %}`: `{% raw %}{{ x | tojson }}{% endraw %}`,
		`{{ x | tojsonish }}{{ x | trimmed }}`:  `{{ x | tojsonish }}{{ x | trimmed }}`,
		`{{- x |  tojson -}}`:                   `{{- x |  tandem_tojson -}}`,
		`{ {{ x | trim }} }`:                    `{ {{ x | tandem_trim }} }`,
		`{{ x | tojson`:                         `{{ x | tandem_tojson`,
		`{`:                                     `{`,
	} {
		assert.Equal(t, want, rewriteFilters(src), src)
	}
}

func TestStrftime(t *testing.T) {
	tm := time.Date(2026, 1, 5, 15, 4, 5, 123456000, time.UTC)
	for format, want := range map[string]string{
		"%d %b %Y":          "05 Jan 2026",
		"%-d %B %y":         "5 January 26",
		"%A %a %j %e":       "Monday Mon 005  5",
		"%H:%M:%S %I%p %-I": "15:04:05 03PM 3",
		"%F %T.%f":          "2026-01-05 15:04:05.123456",
		"100%% %Q %Z":       "100% %Q ",
		"%m/%-m %w":         "01/1 1",
		"trailing %":        "trailing %",
	} {
		assert.Equal(t, want, strftime(tm, format), format)
	}
}

func TestSplitThink(t *testing.T) {
	for text, want := range map[string][2]string{
		"<think>\nR\n</think>\n\nC":       {"R", "C"},
		"<think>R</think>C":               {"R", "C"},
		"pre<think>\n\n</think>\n\nC":     {"", "C"},
		"a</think>b</think>\nc":           {"a", "c"},
		"no think":                        {"", "no think"},
		"<think>\ncut off":                {"cut off", ""},
		"<think>x<think>\ny\n</think>z":   {"y", "z"},
		"<think>\n\nR1\n\nR2\n\n</think>": {"R1\n\nR2", ""},
	} {
		r, c := splitThink(text)
		assert.Equal(t, want, [2]string{r, c}, text)
	}
}

func FuzzJSONValue(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x"]}`, `[]`, `null`, `"\u00e9"`, `{"b": {"c": [true, false]}}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsonValue(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("jsonValue accepted invalid JSON %q", data)
		}
		s, err := pythonDumps(v)
		if err != nil {
			t.Fatalf("dumps: %v", err)
		}
		var want, got any
		if json.Unmarshal(data, &want) != nil || strings.Contains(s, "Infinity") {
			return
		}
		if err := json.Unmarshal([]byte(s), &got); err != nil {
			t.Fatalf("dumps wrote invalid JSON %q: %v", s, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("round trip changed the value: %q -> %q", data, s)
		}
	})
}

func FuzzRewriteFilters(f *testing.F) {
	for _, s := range []string{`{{ x | tojson }}`, `{% raw %}{{ | tojson`, `{# {{ #} | trim`, `{{ "\" | trim" }}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out := rewriteFilters(src)
		if !strings.Contains(src, "tojson") && !strings.Contains(src, "trim") && out != src {
			t.Fatalf("changed a template without tojson or trim: %q -> %q", src, out)
		}
		back := strings.NewReplacer(tojsonName, "tojson", trimName, "trim").Replace(out)
		if !strings.Contains(src, "tandem_") && back != src {
			t.Fatalf("rewrite is not a renaming: %q -> %q", src, out)
		}
	})
}
