package sft

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadJSONL(t *testing.T) {
	t.Parallel()
	in := "{\"prompt\": \"What is 1 + 2?\", \"completion\": \" 3\\n\"}\r\n\n   \n" +
		`{"completion": "b", "prompt": ""}` + "\n" +
		`{"prompt": "é\u0041", "completion": "x"}` // no final newline
	exs, err := ReadJSONL(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []Example{
		{Prompt: "What is 1 + 2?", Completion: " 3\n", Line: 1},
		{Prompt: "", Completion: "b", Line: 4},
		{Prompt: "éA", Completion: "x", Line: 5},
	}, exs)
}

func TestReadJSONLErrors(t *testing.T) {
	t.Parallel()
	ok := `{"prompt": "p", "completion": "c"}` + "\n"
	for _, tc := range []struct {
		name, line string
		field      string
		msg        string
	}{
		{"not json", `{"prompt": "p", "completion": }`, "", "invalid JSON"},
		{"truncated", `{"prompt": "p"`, "", "invalid JSON"},
		{"array", `["p", "c"]`, "", "want an object"},
		{"number prompt", `{"prompt": 3, "completion": "c"}`, "prompt", "is a JSON number; want a string"},
		{"null completion", `{"prompt": "p", "completion": null}`, "completion", "missing"},
		{"object completion", `{"prompt": "p", "completion": {"a": 1}}`, "completion", "want a string"},
		{"missing prompt", `{"completion": "c"}`, "prompt", "missing"},
		{"missing completion", `{"prompt": "p"}`, "completion", "missing"},
		{"empty completion", `{"prompt": "p", "completion": ""}`, "completion", "is empty"},
		{"unknown key", `{"prompt": "p", "completion": "c", "answer": "x"}`, "answer", "unknown field"},
		{"two objects", `{"prompt": "p", "completion": "c"} {"prompt": "p", "completion": "c"}`, "", "text after the JSON object"},
		{"trailing brace", `{"prompt": "p", "completion": "c"}}`, "", "text after the JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadJSONL(strings.NewReader(ok + "\n" + ok + tc.line + "\n" + ok))
			var le *LineError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, 4, le.Line, "the blank line counts")
			assert.Equal(t, tc.field, le.Field)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Contains(t, err.Error(), "line 4")
		})
	}
	_, err := ReadJSONL(strings.NewReader("\n \n"))
	require.ErrorIs(t, err, ErrNoExamples)

	long := `{"prompt": "` + strings.Repeat("a", MaxLineBytes) + `", "completion": "c"}`
	_, err = ReadJSONL(strings.NewReader(ok + long + "\n"))
	var le *LineError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 2, le.Line)
	assert.Contains(t, err.Error(), "longer than")

	// A line longer than the reader's buffer but within the limit is read.
	big := `{"prompt": "` + strings.Repeat("b", 200_000) + `", "completion": "c"}`
	exs, err := ReadJSONL(strings.NewReader(big + "\n" + ok))
	require.NoError(t, err)
	require.Len(t, exs, 2)
	assert.Len(t, exs[0].Prompt, 200_000)
	assert.Equal(t, 2, exs[1].Line)
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "d.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"prompt":"a","completion":"b"}`+"\n"+`{"prompt":"a"}`+"\n"), 0o600))
	_, err := ReadFile(path)
	require.ErrorContains(t, err, path+": sft: line 2: field \"completion\": missing")
	_, err = ReadFile(filepath.Join(dir, "none.jsonl"))
	require.Error(t, err)
}

// FuzzReadJSONL checks that any input is either read into examples that
// satisfy the format's rules and survive a round trip, or refused with a
// LineError (or ErrNoExamples); it never panics.
func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"prompt": "What is 1 + 2?", "completion": " 3\n"}` + "\n"))
	f.Add([]byte("{\"prompt\":\"\",\"completion\":\"x\"}\r\n\n{\"prompt\":\"a\",\"completion\":\"b\"}"))
	f.Add([]byte(`{"prompt": 1}`))
	f.Add([]byte(`{"prompt":"a","completion":"b","c":1}`))
	f.Add([]byte(`{"prompt":"a","completion":"b"}}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		exs, err := ReadJSONL(strings.NewReader(string(data)))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) && !errors.Is(err, ErrNoExamples) {
				t.Fatalf("error %v is neither a LineError nor ErrNoExamples", err)
			}
			if le != nil && le.Line < 1 {
				t.Fatalf("line %d in %v", le.Line, err)
			}
			return
		}
		var sb strings.Builder
		prev := 0
		for _, ex := range exs {
			if ex.Completion == "" || ex.Line <= prev {
				t.Fatalf("bad example %+v after line %d", ex, prev)
			}
			prev = ex.Line
			b, err := json.Marshal(ex)
			if err != nil {
				t.Fatal(err)
			}
			sb.Write(b)
			sb.WriteByte('\n')
		}
		again, err := ReadJSONL(strings.NewReader(sb.String()))
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if len(again) != len(exs) {
			t.Fatalf("round trip: %d examples, want %d", len(again), len(exs))
		}
		for i := range exs {
			if again[i].Prompt != exs[i].Prompt || again[i].Completion != exs[i].Completion {
				t.Fatalf("round trip of example %d: %+v, want %+v", i, again[i], exs[i])
			}
		}
	})
}
