package chat_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/tokenizer"
)

// chatML is a small ChatML template, as many models ship.
const chatML = `{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>' + '\n' }}{% endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

func jinjaRenderer(t *testing.T, src string) (chat.Renderer, *fakeTokenizer) {
	t.Helper()
	tok := newFakeTokenizer()
	r, err := chat.NewJinja(tok, tokenizer.Config{EOSToken: "<|im_end|>", ChatTemplate: src}, chat.JinjaOptions{})
	require.NoError(t, err)
	return r, tok
}

func TestJinjaRenderer(t *testing.T) {
	r, tok := jinjaRenderer(t, chatML)
	msgs := fiveTurns[1:] // U1 A1 U2 A2

	prompt, err := r.GenerationPrompt(msgs[:3], "Sure")
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nU2<|im_end|>\n"+
		"<|im_start|>assistant\nSure", text(t, tok, prompt))

	ex, err := r.Supervised(msgs, chat.LastAssistantMessage)
	require.NoError(t, err)
	assert.Equal(t, "A2<|im_end|>", runs(t, tok, ex))
	ex, err = r.Supervised(msgs, chat.AllAssistantMessages)
	require.NoError(t, err)
	// The template's "\n" after <|im_end|> is not trained.
	assert.Equal(t, "A1<|im_end|>|A2<|im_end|>", runs(t, tok, ex))
	ex, err = r.Supervised(msgs, chat.AllTokens)
	require.NoError(t, err)
	assert.Equal(t, text(t, tok, ex.Tokens), runs(t, tok, ex))

	_, err = r.Supervised(msgs, chat.AllMessages)
	assert.ErrorIs(t, err, chat.ErrUnsupported)
	_, err = r.Supervised(msgs[:3], chat.LastAssistantMessage)
	assert.ErrorIs(t, err, chat.ErrNothingToTrain)
	_, err = r.GenerationPrompt(nil, "")
	assert.ErrorIs(t, err, chat.ErrEmptyConversation)

	m, term, err := r.Parse(tok.Encode("Hi<|im_end|>", tokenizer.EncodeOptions{}))
	require.NoError(t, err)
	assert.Equal(t, chat.StopSequence, term)
	assert.Equal(t, chat.Message{Role: chat.RoleAssistant, Content: "Hi"}, m)
	assert.Equal(t, []int{2}, r.StopTokens())
	assert.False(t, r.HasExtensionProperty())
}

// A template that drops assistant messages from history has no prompt to
// train an earlier turn after.
func TestJinjaRendererRewrittenHistory(t *testing.T) {
	r, _ := jinjaRenderer(t, `{% for m in messages %}{% if loop.last or m.role != 'assistant' %}`+
		`{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endif %}{% endfor %}`+
		`{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`)
	_, err := r.Supervised(fiveTurns[1:], chat.AllAssistantMessages)
	assert.ErrorIs(t, err, chat.ErrUnsupported)
	assert.ErrorContains(t, err, "rewrites history")
	_, err = r.Supervised(fiveTurns[1:], chat.LastAssistantMessage)
	assert.NoError(t, err)
}

func TestTemplateRequest(t *testing.T) {
	line := `{"messages": [{"role": "user", "content": "hi", "meta": {"b": 1, "a": [2.0, "é"]}}],
		"add_generation_prompt": true, "enable_thinking": false, "tools": null, "tokenize": true, "date_string": "1 Jan 2026"}`
	req, err := chat.DecodeTemplateRequest([]byte(line))
	require.NoError(t, err)
	assert.True(t, req.Options.AddGenerationPrompt)
	assert.Nil(t, req.Options.Tools)
	assert.Len(t, req.Options.Kwargs, 2)

	cfg := tokenizer.Config{EOSToken: "</s>", ChatTemplate: `{{ messages[0].meta | tojson }} {{ enable_thinking }} ` +
		`{{ date_string }} {{ tools is none }} {{ tokenize is defined }} {{ eos_token }}{% if add_generation_prompt %}!{% endif %}`}
	out, err := chat.ApplyTemplate(cfg, req.Messages, req.Options)
	require.NoError(t, err)
	assert.Equal(t, `{"b": 1, "a": [2.0, "é"]} False 1 Jan 2026 True False </s>!`, out)

	tok := newFakeTokenizer()
	ids, err := chat.ApplyTemplateIDs(tok, cfg, req.Messages, req.Options)
	require.NoError(t, err)
	assert.Equal(t, out, text(t, tok, ids))

	req, err = chat.DecodeTemplateRequest([]byte(`{"messages": [], "chat_template_kwargs": {"enable_thinking": false}, "x": 1}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"enable_thinking": json.RawMessage("false"), "x": json.RawMessage("1")}, req.Options.Kwargs)

	for _, bad := range []string{`{}`, `{"messages": {}}`, `[1]`, `{"messages": [], "add_generation_prompt": "yes"}`, `{"messages": [`,
		`{"messages": [], "chat_template_kwargs": [1]}`, `{"messages": [], "a": 1, "chat_template_kwargs": {"a": 2}}`} {
		_, err := chat.DecodeTemplateRequest([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestTemplateErrors(t *testing.T) {
	_, err := chat.NewTemplate(tokenizer.Config{})
	assert.ErrorIs(t, err, chat.ErrNoTemplate)
	_, err = chat.NewTemplate(tokenizer.Config{ChatTemplate: "{% for %}"})
	assert.ErrorContains(t, err, "compile chat template")

	tmpl, err := chat.NewTemplate(tokenizer.Config{ChatTemplate: `{{ raise_exception("no " ~ messages | length) }}`})
	require.NoError(t, err)
	_, err = tmpl.Render(json.RawMessage(`[{"role": "user", "content": "x"}]`), chat.TemplateOptions{})
	var te *chat.TemplateError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "no 1", te.Message)

	tmpl, err = chat.NewTemplate(tokenizer.Config{ChatTemplate: chatML})
	require.NoError(t, err)
	for _, bad := range []string{`{"role": "user"}`, `[`, `[{"a": 1}] x`} {
		_, err := tmpl.Render(json.RawMessage(bad), chat.TemplateOptions{})
		assert.Error(t, err, bad)
	}
	_, err = tmpl.Render(json.RawMessage(`[]`), chat.TemplateOptions{AddGenerationPrompt: true, ContinueFinalMessage: true})
	assert.ErrorContains(t, err, "exclude each other")
	_, err = tmpl.Render(json.RawMessage(`[]`), chat.TemplateOptions{Kwargs: map[string]any{"messages": 1}})
	assert.ErrorContains(t, err, "not a kwarg")

	out, err := tmpl.Render(json.RawMessage(`[{"role": "assistant", "content": "One, two,"}]`),
		chat.TemplateOptions{ContinueFinalMessage: true})
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>assistant\nOne, two,", out)
}

func TestMessageJSON(t *testing.T) {
	m := chat.Message{Role: chat.RoleAssistant, Content: "a<b>", Reasoning: "r",
		ToolCalls: []chat.ToolCall{{ID: "c1", Name: "f", Arguments: `{"z": 1, "a": 2}`}, {Name: "g", Arguments: "not json"}}}
	data, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"role": "assistant", "content": "a<b>", "reasoning_content": "r", "tool_calls": [
		{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": 2}}},
		{"type": "function", "function": {"name": "g", "arguments": "not json"}}]}`, string(data))
	var back chat.Message
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, `{"z":1,"a":2}`, back.ToolCalls[0].Arguments) // compacted by encoding/json
	back.ToolCalls[0].Arguments = m.ToolCalls[0].Arguments
	m.ToolCalls[0].Type, m.ToolCalls[1].Type = "function", "function"
	assert.Equal(t, m, back)

	var parts chat.Message
	require.NoError(t, json.Unmarshal([]byte(`{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}`), &parts))
	assert.Equal(t, "ab", parts.Content)
	assert.Error(t, json.Unmarshal([]byte(`{"role": "user", "content": [{"type": "image"}]}`), &parts))

	var flat chat.ToolCall
	require.NoError(t, json.Unmarshal([]byte(`{"name": "f", "arguments": "{\"x\": 1}"}`), &flat))
	assert.Equal(t, chat.ToolCall{Name: "f", Arguments: `{"x": 1}`}, flat)
}

// FuzzDecodeTemplateRequest: any line decodes or fails cleanly, and a
// decoded one renders or fails cleanly.
func FuzzDecodeTemplateRequest(f *testing.F) {
	f.Add([]byte(`{"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true}`))
	f.Add([]byte(`{"messages": [], "tools": [{"a": 1}], "x": {"y": [1, 2.5]}}`))
	tmpl, err := chat.NewTemplate(tokenizer.Config{ChatTemplate: chatML + `{{ tools | tojson }}{{ x | tojson(indent=1) }}`})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := chat.DecodeTemplateRequest(data)
		if err != nil {
			return
		}
		_, _ = tmpl.Render(req.Messages, req.Options)
	})
}
