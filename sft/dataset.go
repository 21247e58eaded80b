package sft

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Example is one supervised pair: the model is shown Prompt and trained to
// produce Completion.
type Example struct {
	Prompt     string `json:"prompt"`
	Completion string `json:"completion"`
	// Line is the 1-based line of the file the example was read from (0
	// when it was not read from a file); errors about it name the line.
	Line int `json:"-"`
}

// where names an example in errors: its line when it has one, else its
// index.
func (e Example) where(i int) string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d", e.Line)
	}
	return fmt.Sprintf("example %d", i)
}

// MaxLineBytes bounds one line of a JSONL dataset.
const MaxLineBytes = 1 << 20

// ErrNoExamples is returned for a dataset without any example.
var ErrNoExamples = errors.New("sft: dataset has no examples")

// LineError is a problem with one line of a JSONL dataset. Field names the
// JSON field at fault, or is empty when the line as a whole is.
type LineError struct {
	Line  int
	Field string
	Err   error
}

func (e *LineError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("sft: line %d: field %q: %v", e.Line, e.Field, e.Err)
	}
	return fmt.Sprintf("sft: line %d: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ReadJSONL reads a dataset with one JSON object per line:
//
//	{"prompt": "What is 2 + 3?", "completion": " 5\n"}
//
// Both fields are required strings; the completion must not be empty; other
// fields are an error (a misspelt key would otherwise be silently dropped).
// Blank lines are skipped. A bad line stops the read with a *LineError
// naming the line and field.
func ReadJSONL(r io.Reader) ([]Example, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Example
	var long bytes.Buffer
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long.Reset()
			long.Write(b)
			for errors.Is(err, bufio.ErrBufferFull) && long.Len() <= MaxLineBytes {
				b, err = br.ReadSlice('\n')
				long.Write(b)
			}
			if long.Len() > MaxLineBytes {
				return nil, &LineError{Line: line, Err: fmt.Errorf("line is longer than %d bytes", MaxLineBytes)}
			}
			b = long.Bytes()
		}
		if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("sft: read line %d: %w", line, err)
		}
		if text := bytes.TrimSpace(b); len(text) > 0 {
			ex, perr := parseLine(text)
			if perr != nil {
				perr.Line = line
				return nil, perr
			}
			ex.Line = line
			out = append(out, ex)
		}
		if err == io.EOF {
			break
		}
	}
	if len(out) == 0 {
		return nil, ErrNoExamples
	}
	return out, nil
}

// ReadFile reads a JSONL dataset from path (see ReadJSONL); errors name the
// file.
func ReadFile(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sft: %w", err)
	}
	defer f.Close()
	exs, err := ReadJSONL(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return exs, nil
}

// parseLine decodes one non-blank line.
func parseLine(text []byte) (Example, *LineError) {
	var raw struct {
		Prompt     *string `json:"prompt"`
		Completion *string `json:"completion"`
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return Example{}, &LineError{Field: te.Field, Err: fmt.Errorf("is a JSON %s; want a string", te.Value)}
		case errors.As(err, &te):
			return Example{}, &LineError{Err: fmt.Errorf("is a JSON %s; want an object {\"prompt\": ..., \"completion\": ...}", te.Value)}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return Example{}, &LineError{Field: name, Err: errors.New("unknown field; want only \"prompt\" and \"completion\"")}
		}
		return Example{}, &LineError{Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	if dec.InputOffset() != int64(len(text)) {
		return Example{}, &LineError{Err: errors.New("text after the JSON object; want one object per line")}
	}
	if raw.Prompt == nil {
		return Example{}, &LineError{Field: "prompt", Err: errors.New("missing")}
	}
	if raw.Completion == nil {
		return Example{}, &LineError{Field: "completion", Err: errors.New("missing")}
	}
	if *raw.Completion == "" {
		return Example{}, &LineError{Field: "completion", Err: errors.New("is empty; there is nothing to learn")}
	}
	return Example{Prompt: *raw.Prompt, Completion: *raw.Completion}, nil
}
