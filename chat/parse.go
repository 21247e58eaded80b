package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// stopSet is how a family's completions end: one end-of-turn token and any
// end-of-sequence tokens.
type stopSet struct {
	endOfTurn int
	eos       []int
}

func (s stopSet) tokens() []int { return append([]int{s.endOfTurn}, s.eos...) }

// split cuts a completion at its first stop token. Without one the
// completion was truncated (Malformed); with tokens after it, it is
// Malformed too, and the message is what came before the stop.
func (s stopSet) split(completion []int) ([]int, Termination) {
	for j, id := range completion {
		term := StopSequence
		switch {
		case id == s.endOfTurn:
		case slices.Contains(s.eos, id):
			term = EOS
		default:
			continue
		}
		if j != len(completion)-1 {
			term = Malformed
		}
		return completion[:j], term
	}
	return completion, Malformed
}

// decodeCompletion decodes the ids before the stop token, keeping special
// tokens (a stray control token stays visible in the text).
func decodeCompletion(tok Tokenizer, name string, completion []int, stops stopSet) (string, Termination, error) {
	body, term := stops.split(completion)
	text, err := tok.Decode(body, false)
	if err != nil {
		return "", Malformed, fmt.Errorf("chat: %s: decode completion: %w", name, err)
	}
	return text, term, nil
}

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// splitThink separates reasoning from an answer the way Qwen3's chat
// template reads a <think> block out of content: the reasoning is what lies
// between the last <think> before the first </think> and that </think>,
// with surrounding "\n" stripped; the answer is what follows the last
// </think>, with leading "\n" stripped. A <think> never closed (a completion
// cut off while reasoning) makes everything after it reasoning.
func splitThink(text string) (reasoning, content string) {
	if before, _, ok := strings.Cut(text, thinkClose); ok {
		reasoning = strings.TrimRight(before, "\n")
		if i := strings.LastIndex(reasoning, thinkOpen); i >= 0 {
			reasoning = reasoning[i+len(thinkOpen):]
		}
		reasoning = strings.TrimLeft(reasoning, "\n")
		content = text[strings.LastIndex(text, thinkClose)+len(thinkClose):]
		return reasoning, strings.TrimLeft(content, "\n")
	}
	if before, after, ok := strings.Cut(text, thinkOpen); ok {
		return strings.Trim(after, "\n"), before
	}
	return "", text
}

const (
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
)

// splitToolCalls takes Qwen3's <tool_call>{"name": …, "arguments": …}
// </tool_call> blocks out of content. The template writes "\n" before the
// first block when there is text, and between blocks; those separators go
// with the blocks. A block that does not parse, or one never closed, is an
// UnparsedToolCall (its text stays in the content when never closed).
func splitToolCalls(content string) (string, []ToolCall, []UnparsedToolCall) {
	var (
		text  strings.Builder
		calls []ToolCall
		bad   []UnparsedToolCall
		rest  = content
		first = true
	)
	for {
		start := strings.Index(rest, toolCallOpen)
		if start < 0 {
			break
		}
		end := strings.Index(rest[start:], toolCallClose)
		if end < 0 {
			bad = append(bad, UnparsedToolCall{Raw: rest[start:], Error: "<tool_call> opened without a matching </tool_call>"})
			break
		}
		end += start
		before := rest[:start]
		if first {
			before = strings.TrimSuffix(before, "\n")
		} else if before == "\n" {
			before = ""
		}
		text.WriteString(before)
		raw := rest[start : end+len(toolCallClose)]
		if call, err := parseToolCallJSON(rest[start+len(toolCallOpen) : end]); err != nil {
			bad = append(bad, UnparsedToolCall{Raw: raw, Error: err.Error()})
		} else {
			calls = append(calls, call)
		}
		rest = rest[end+len(toolCallClose):]
		first = false
	}
	text.WriteString(rest)
	return text.String(), calls, bad
}

// parseToolCallJSON reads {"name": "...", "arguments": {...}} (arguments may
// also be a JSON string holding the object's text); the arguments keep the
// model's exact text.
func parseToolCallJSON(body string) (ToolCall, error) {
	var j struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		ID        any             `json:"id"`
	}
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(body)))
	if err := dec.Decode(&j); err != nil {
		return ToolCall{}, fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return ToolCall{}, fmt.Errorf("invalid JSON: data after the object")
	}
	if j.Name == nil {
		return ToolCall{}, fmt.Errorf("missing or invalid 'name' field")
	}
	args := bytes.TrimSpace(j.Arguments)
	var text string
	switch {
	case len(args) > 0 && args[0] == '{':
		text = string(args)
	case len(args) > 0 && args[0] == '"':
		if err := json.Unmarshal(args, &text); err != nil || !json.Valid([]byte(text)) {
			return ToolCall{}, fmt.Errorf("missing or invalid 'arguments' field")
		}
	default:
		return ToolCall{}, fmt.Errorf("missing or invalid 'arguments' field")
	}
	id, _ := j.ID.(string)
	return ToolCall{ID: id, Type: "function", Name: *j.Name, Arguments: text}, nil
}
