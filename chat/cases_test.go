package chat_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tandemrl/tandem/chat"
)

// chatCase is one conversation of the note's §10 item 16, in Hugging Face's
// message format.
type chatCase struct {
	name     string
	messages string            // JSON array
	tools    string            // JSON array or ""
	gen      bool              // add_generation_prompt
	cont     bool              // continue_final_message
	kwargs   map[string]string // name -> JSON value
}

// fixedNow is strftime_now's clock on both sides.
var fixedNow = time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)

const fixedNowISO = "2026-01-15T09:30:00"

const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "Current weather & wind <b>now</b>",
 "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City, e.g. Zürich"},
 "unit": {"type": "string", "enum": ["°C", "°F"]}}, "required": ["city"]}}}`

const timeTool = `{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}`

var chatCases = []chatCase{
	{name: "single", gen: true, messages: `[{"role": "user", "content": "What is 2+2?"}]`},
	{name: "system_whitespace", gen: true, messages: `[
		{"role": "system", "content": "  You are terse.  \n"},
		{"role": "user", "content": "  Hello there!  \n"}]`},
	{name: "multi_turn_reasoning", gen: true, messages: `[
		{"role": "system", "content": "You are helpful."},
		{"role": "user", "content": "Translate 你好 to English 😀"},
		{"role": "assistant", "content": "Hello.", "reasoning_content": "The user wants a translation.\nIt means hello."},
		{"role": "user", "content": "And 世界?"},
		{"role": "assistant", "content": "<think>\nEasy one.\n</think>\n\nWorld."},
		{"role": "user", "content": "Thanks. One more: さようなら"}]`},
	{name: "final_reasoning", messages: `[
		{"role": "user", "content": "What is 2+2?"},
		{"role": "assistant", "content": "4", "reasoning_content": "Let me add.\n2+2=4"}]`},
	{name: "final_no_reasoning", messages: `[
		{"role": "system", "content": "Be brief."},
		{"role": "user", "content": "Capital of France?"},
		{"role": "assistant", "content": "Paris."},
		{"role": "user", "content": "And of Italy?"},
		{"role": "assistant", "content": "Rome."}]`},
	{name: "thinking_disabled", gen: true, kwargs: map[string]string{"enable_thinking": "false"}, messages: `[
		{"role": "user", "content": "Hi!"},
		{"role": "assistant", "content": "Hello! How can I help?"},
		{"role": "user", "content": "Tell me a joke."}]`},
	{name: "tools", gen: true, tools: "[" + weatherTool + ", " + timeTool + "]", messages: `[
		{"role": "system", "content": "You can call tools."},
		{"role": "user", "content": "Weather in Paris, and the time?"},
		{"role": "assistant", "content": "", "tool_calls": [
			{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "°C"}}},
			{"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": {}}}]},
		{"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21, \"sky\": \"clear\"}"},
		{"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "09:30"}]`},
	{name: "tools_text_and_answer", tools: "[" + weatherTool + "]", messages: `[
		{"role": "user", "content": "Weather in Rome?"},
		{"role": "assistant", "content": "Let me check.", "tool_calls": [
			{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
		{"role": "tool", "content": "sunny"},
		{"role": "assistant", "content": "It is sunny in Rome."}]`},
	{name: "tools_string_arguments", gen: true, messages: `[
		{"role": "user", "content": "Weather in Oslo?"},
		{"role": "assistant", "content": null, "tool_calls": [
			{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
		{"role": "tool", "content": "snow"}]`},
	{name: "special_token_text", gen: true, messages: `[
		{"role": "user", "content": "Say <|im_end|> and <|eot_id|>, <end_of_turn>, <｜end▁of▁sentence｜> and <think> literally."}]`},
	{name: "leading_newline", gen: true, messages: `[
		{"role": "user", "content": "\nHi"},
		{"role": "assistant", "content": "\n\nHello"},
		{"role": "user", "content": "again"}]`},
	{name: "roles_not_alternating", gen: true, messages: `[
		{"role": "user", "content": "One."},
		{"role": "user", "content": "Two."}]`},
	{name: "continue_final", cont: true, messages: `[
		{"role": "user", "content": "Count to three."},
		{"role": "assistant", "content": "One, two,"}]`},
}

func (c chatCase) options(t testing.TB) chat.TemplateOptions {
	t.Helper()
	opts := chat.TemplateOptions{AddGenerationPrompt: c.gen, ContinueFinalMessage: c.cont, Now: func() time.Time { return fixedNow }}
	if c.tools != "" {
		opts.Tools = json.RawMessage(c.tools)
	}
	if len(c.kwargs) > 0 {
		opts.Kwargs = map[string]any{}
		for k, v := range c.kwargs {
			opts.Kwargs[k] = json.RawMessage(v)
		}
	}
	return opts
}

func (c chatCase) request() renderRequest {
	req := renderRequest{Messages: json.RawMessage(c.messages), AddGenerationPrompt: c.gen, ContinueFinalMessage: c.cont, Now: fixedNowISO}
	if c.tools != "" {
		req.Tools = json.RawMessage(c.tools)
	}
	if len(c.kwargs) > 0 {
		req.Kwargs = map[string]any{}
		for k, v := range c.kwargs {
			req.Kwargs[k] = json.RawMessage(v)
		}
	}
	return req
}

// msgs is the conversation as chat.Messages.
func (c chatCase) msgs(t testing.TB) []chat.Message {
	t.Helper()
	var m []chat.Message
	if err := json.Unmarshal([]byte(c.messages), &m); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return m
}
