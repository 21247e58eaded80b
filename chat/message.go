package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Roles the renderers know.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation.
//
// Its JSON form is the OpenAI / Hugging Face message object: "role",
// "content", "reasoning_content" (Reasoning), "tool_calls", "name",
// "tool_call_id" and "trainable", omitted when empty.
type Message struct {
	Role    string
	Content string
	// Reasoning is the assistant's thinking (Qwen3's <think> block;
	// reasoning_content in Hugging Face's templates).
	Reasoning string
	// ToolCalls are the assistant's calls.
	ToolCalls []ToolCall
	// UnparsedToolCalls are tool-call blocks Parse found but could not read;
	// renderers never render them.
	UnparsedToolCalls []UnparsedToolCall
	// Name names the tool a tool message answers (or a participant).
	Name string
	// ToolCallID is the id of the call a tool message answers.
	ToolCallID string
	// Trainable marks the message trained or not under Customized.
	Trainable *bool
}

// ToolCall is one function call an assistant makes.
type ToolCall struct {
	ID   string // optional
	Type string // "function" when empty
	Name string
	// Arguments is the call's arguments as JSON text (an object).
	Arguments string
}

// UnparsedToolCall is a tool-call block that did not parse.
type UnparsedToolCall struct {
	Raw   string // the block's text
	Error string // what was wrong
}

// Bool returns a pointer to b, for Message.Trainable.
func Bool(b bool) *bool { return &b }

type messageJSON struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Reasoning  string          `json:"reasoning_content,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Trainable  *bool           `json:"trainable,omitempty"`
}

// MarshalJSON writes the OpenAI / Hugging Face message object.
func (m Message) MarshalJSON() ([]byte, error) {
	content, err := marshalString(m.Content)
	if err != nil {
		return nil, err
	}
	return marshalNoEscape(messageJSON{
		Role: m.Role, Content: content, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls,
		Name: m.Name, ToolCallID: m.ToolCallID, Trainable: m.Trainable,
	})
}

// UnmarshalJSON reads an OpenAI / Hugging Face message object. Content may
// be a string, null, or a list of {"type": "text", "text": ...} parts, which
// are joined.
func (m *Message) UnmarshalJSON(data []byte) error {
	var j messageJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	content, err := contentText(j.Content)
	if err != nil {
		return err
	}
	*m = Message{Role: j.Role, Content: content, Reasoning: j.Reasoning, ToolCalls: j.ToolCalls,
		Name: j.Name, ToolCallID: j.ToolCallID, Trainable: j.Trainable}
	return nil
}

func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("chat: message content must be a string or a list of text parts: %w", err)
	}
	var b bytes.Buffer
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("chat: message content part %d has type %q; only text parts are supported", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

type toolCallJSON struct {
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type"`
	Function toolCallFunction `json:"function"`
}

type toolCallFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// MarshalJSON writes {"id", "type", "function": {"name", "arguments"}} with
// the arguments as a JSON object (the form Hugging Face's templates expect)
// when they are valid JSON, else as a string.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	typ := c.Type
	if typ == "" {
		typ = "function"
	}
	args := json.RawMessage(c.Arguments)
	if !json.Valid(args) {
		var err error
		if args, err = marshalString(c.Arguments); err != nil {
			return nil, err
		}
	}
	return marshalNoEscape(toolCallJSON{ID: c.ID, Type: typ, Function: toolCallFunction{Name: c.Name, Arguments: args}})
}

// UnmarshalJSON reads the OpenAI form, or a flat {"name", "arguments"}.
// Arguments given as a JSON string are taken as the JSON text they hold;
// given as an object, as that object's text.
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	var j struct {
		ID        string            `json:"id"`
		Type      string            `json:"type"`
		Function  *toolCallFunction `json:"function"`
		Name      string            `json:"name"`
		Arguments json.RawMessage   `json:"arguments"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	fn := toolCallFunction{Name: j.Name, Arguments: j.Arguments}
	if j.Function != nil {
		fn = *j.Function
	}
	args := bytes.TrimSpace(fn.Arguments)
	text := string(args)
	if len(args) > 0 && args[0] == '"' {
		if err := json.Unmarshal(args, &text); err != nil {
			return err
		}
	}
	*c = ToolCall{ID: j.ID, Type: j.Type, Name: fn.Name, Arguments: text}
	return nil
}

func marshalString(s string) (json.RawMessage, error) { return marshalNoEscape(s) }

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
