package chat_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/tokenizer"
)

// propertyRenderer is a renderer on a real tokenizer, with what it renders.
type propertyRenderer struct {
	name, model string
	reasoning   bool
	tools       bool
}

var propertyRenderers = []propertyRenderer{
	{name: "qwen3", model: "qwen3", reasoning: true, tools: true},
	{name: "qwen3_disable_thinking", model: "qwen3", tools: true},
	{name: "qwen3_preserve_thinking", model: "qwen3", reasoning: true, tools: true},
	{name: "llama3", model: "llama3_1"},
	{name: "deepseek_v3", model: "deepseek_v3", tools: true},
	{name: "gemma3", model: "gemma3"},
	{name: "role_colon", model: "llama3_1"},
	{name: "jinja", model: "qwen3", reasoning: true},
	{name: "jinja", model: "llama3_1"},
	{name: "jinja", model: "deepseek_v3"},
	{name: "jinja", model: "gemma3"},
}

// propertyConversations end in an assistant message; "reasoning" and
// "tools" ones only go to renderers that render those.
func propertyConversations(p propertyRenderer) map[string][]chat.Message {
	u := func(s string) chat.Message { return chat.Message{Role: chat.RoleUser, Content: s} }
	a := func(s string) chat.Message { return chat.Message{Role: chat.RoleAssistant, Content: s} }
	convs := map[string][]chat.Message{
		"single": {u("What is the capital of France?"), a("Paris.")},
		"system_multi_turn": {
			{Role: chat.RoleSystem, Content: "You are concise."},
			u("Name a prime."), a("7"), u("A bigger one, in 日本語?"), a("十三 (13) 😀"),
		},
		"multi_line": {u("Write two lines."), a("First line.\nSecond line.")},
	}
	if p.reasoning {
		convs["reasoning"] = []chat.Message{
			u("What is 2+3?"),
			{Role: chat.RoleAssistant, Content: "5", Reasoning: "Two plus three.\nThat is 5."},
			u("Times 4?"),
			{Role: chat.RoleAssistant, Content: "20", Reasoning: "5*4=20"},
		}
	}
	if p.tools {
		convs["tools"] = []chat.Message{
			u("Weather in Paris?"),
			{Role: chat.RoleAssistant, Content: "Checking.", ToolCalls: []chat.ToolCall{
				{Type: "function", Name: "get_weather", Arguments: `{"city": "Paris", "days": [1, 2]}`},
				{Type: "function", Name: "get_time", Arguments: `{}`}}},
			{Role: chat.RoleTool, Content: "sunny"},
			{Role: chat.RoleTool, Content: "09:30"},
			a("Sunny, at half past nine."),
		}
		convs["tool_call_last"] = []chat.Message{
			u("Weather in Oslo?"),
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
				{Type: "function", Name: "get_weather", Arguments: `{"city": "Oslo"}`}}},
		}
	}
	return convs
}

// renderersFor is the renderer on each tokenizer implementation.
func renderersFor(t *testing.T, p propertyRenderer) []propertyImpl {
	t.Helper()
	var out []propertyImpl
	for _, impl := range tokenizersFor(t, p.model) {
		r, err := chat.New(p.name, impl.tok, impl.cfg)
		require.NoError(t, err)
		out = append(out, propertyImpl{impl.name, r, impl.tok})
	}
	return out
}

type propertyImpl struct {
	tokName string
	r       chat.Renderer
	tok     chat.Tokenizer
}

// TestSupervisedPromptParseExtension checks, on the real tokenizers,
// tinker-cookbook's renderer properties: the prompt part of a supervised
// example is the generation prompt; parsing the trained tokens gives back
// the final message; each turn's prompt is a prefix of the whole
// conversation where the extension property is claimed.
func TestSupervisedPromptParseExtension(t *testing.T) {
	for _, p := range propertyRenderers {
		t.Run(p.name+"/"+p.model, func(t *testing.T) {
			t.Parallel()
			for _, impl := range renderersFor(t, p) {
				t.Run(impl.tokName, func(t *testing.T) { checkProperties(t, p, impl.r) })
			}
		})
	}
}

func checkProperties(t *testing.T, p propertyRenderer, r chat.Renderer) {
	for name, conv := range propertyConversations(p) {
		n := len(conv)
		ex, err := r.Supervised(conv, chat.LastAssistantMessage)
		require.NoError(t, err, name)
		require.Len(t, ex.Weights, len(ex.Tokens), name)
		prompt, err := r.GenerationPrompt(conv[:n-1], "")
		require.NoError(t, err, name)
		require.True(t, len(prompt) < len(ex.Tokens) && slices.Equal(prompt, ex.Tokens[:len(prompt)]),
			"%s: the generation prompt is not a prefix of the example\nprompt:  %v\nexample: %v", name, prompt, ex.Tokens)
		// Weights: 0 over the prompt, then 1 through the final
		// end-of-turn token; only the Jinja renderer has a tail
		// after it (the template's "\n"), weighted 0.
		end := len(ex.Weights)
		for end > 0 && ex.Weights[end-1] == 0 {
			end--
		}
		if p.name != "jinja" {
			require.Equal(t, len(ex.Weights), end, "%s: untrained tokens after the trained turn", name)
		}
		for i, w := range ex.Weights {
			want := float32(0)
			if i >= len(prompt) && i < end {
				want = 1
			}
			require.Equal(t, want, w, "%s: weight of token %d (prompt has %d)", name, i, len(prompt))
		}

		action := ex.Tokens[len(prompt):end]
		got, term, err := r.Parse(action)
		require.NoError(t, err, name)
		assert.Equal(t, chat.StopSequence, term, name)
		assert.Equal(t, carried(conv[n-1]), carried(got), name)

		// Extension: a turn as sampled (its prompt and its tokens)
		// begins the prompt of the next turn.
		extends := true
		var prev []int
		for k := range conv {
			if conv[k].Role != chat.RoleAssistant {
				continue
			}
			if prev != nil {
				pk, err := r.GenerationPrompt(conv[:k], "")
				require.NoError(t, err, name)
				extends = extends && len(prev) <= len(pk) && slices.Equal(prev, pk[:len(prev)])
			}
			exk, err := r.Supervised(conv[:k+1], chat.LastAssistantMessage)
			require.NoError(t, err, name)
			prev = exk.Tokens
		}
		if r.HasExtensionProperty() {
			assert.True(t, extends, "%s: %s claims the extension property, but a sampled turn does not begin the next prompt", name, r.Name())
		}
		if name == "reasoning" && p.name == "qwen3" {
			assert.False(t, extends, "qwen3 strips history reasoning, so a turn that reasoned does not begin the next prompt")
		}
	}
}

// carried is the part of a message a render and parse carry.
func carried(m chat.Message) chat.Message {
	return chat.Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls}
}

// TestTrainedTurnsEndOnEndOfTurn: with AllAssistantMessages every assistant
// message's output is trained through its end-of-turn token, and the token
// after that (Qwen3's and Gemma 3's "\n", the next header) is not.
func TestTrainedTurnsEndOnEndOfTurn(t *testing.T) {
	for _, p := range propertyRenderers {
		if p.name == "role_colon" {
			continue // its turns end in text, checked with the fake tokenizer
		}
		t.Run(p.name+"/"+p.model, func(t *testing.T) {
			t.Parallel()
			for _, impl := range renderersFor(t, p) {
				t.Run(impl.tokName, func(t *testing.T) { checkEndOfTurn(t, p, impl.r, impl.tok) })
			}
		})
	}
}

func checkEndOfTurn(t *testing.T, p propertyRenderer, r chat.Renderer, tok chat.Tokenizer) {
	eot := r.StopTokens()[0]
	conv := propertyConversations(p)["system_multi_turn"]
	ex, err := r.Supervised(conv, chat.AllAssistantMessages)
	require.NoError(t, err)
	runs := 0
	for i := range ex.Tokens {
		if ex.Weights[i] == 1 && (i+1 == len(ex.Tokens) || ex.Weights[i+1] == 0) {
			runs++
			assert.Equal(t, eot, ex.Tokens[i], "a trained run ends on token %d, not the end-of-turn token", i)
			if i+1 < len(ex.Tokens) && (p.model == "qwen3" || p.model == "gemma3") {
				nl := tok.Encode("\n", tokenizer.EncodeOptions{})
				assert.Equal(t, nl, ex.Tokens[i+1:i+2], "the token after a trained end-of-turn is the next header's \\n")
			}
		}
	}
	assert.Equal(t, 2, runs, "two assistant messages, two trained runs")
}
