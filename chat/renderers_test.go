package chat_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/chat"
)

func fakeRenderer(t *testing.T, name string) (chat.Renderer, *fakeTokenizer) {
	t.Helper()
	tok := newFakeTokenizer()
	r, err := chat.New(name, tok, fakeConfig)
	require.NoError(t, err)
	return r, tok
}

func text(t *testing.T, tok *fakeTokenizer, ids []int) string {
	t.Helper()
	s, err := tok.Decode(ids, false)
	require.NoError(t, err)
	return s
}

// runs is the text of the trained tokens, one run per maximal stretch of
// weight 1, joined by "|".
func runs(t *testing.T, tok *fakeTokenizer, ex chat.Example) string {
	t.Helper()
	var out []string
	var cur []int
	for i, id := range ex.Tokens {
		switch w := ex.Weights[i]; w {
		case 1:
			cur = append(cur, id)
		case 0:
			if cur != nil {
				out = append(out, text(t, tok, cur))
				cur = nil
			}
		default:
			t.Fatalf("weight %v is neither 0 nor 1", w)
		}
	}
	if cur != nil {
		out = append(out, text(t, tok, cur))
	}
	return strings.Join(out, "|")
}

var fiveTurns = []chat.Message{
	{Role: chat.RoleSystem, Content: "S"},
	{Role: chat.RoleUser, Content: "U1"},
	{Role: chat.RoleAssistant, Content: "A1"},
	{Role: chat.RoleUser, Content: "U2"},
	{Role: chat.RoleAssistant, Content: "A2"},
}

// TestRenderText pins each family's format, written out from its chat
// template (or tinker-cookbook's renderer), on the byte tokenizer.
func TestRenderText(t *testing.T) {
	tests := []struct {
		renderer string
		full     string // Supervised(fiveTurns).Tokens as text
		prompt   string // GenerationPrompt(fiveTurns[:4], "P") as text
	}{
		{"qwen3",
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n" +
				"<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>",
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n" +
				"<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\nP"},
		{"qwen3_disable_thinking",
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n" +
				"<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>",
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n" +
				"<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nP"},
		{"qwen3_preserve_thinking",
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA1<|im_end|>\n" +
				"<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>",
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA1<|im_end|>\n" +
				"<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\nP"},
		{"llama3",
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU1<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nA1<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU2<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nA2<|eot_id|>",
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU1<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nA1<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU2<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nP"},
		{"deepseek_v3",
			"<｜begin▁of▁sentence｜>S<｜User｜>U1<｜Assistant｜>A1<｜end▁of▁sentence｜><｜User｜>U2<｜Assistant｜>A2<｜end▁of▁sentence｜>",
			"<｜begin▁of▁sentence｜>S<｜User｜>U1<｜Assistant｜>A1<｜end▁of▁sentence｜><｜User｜>U2<｜Assistant｜>P"},
		{"gemma3",
			"<bos><start_of_turn>user\nS\n\nU1<end_of_turn>\n<start_of_turn>model\nA1<end_of_turn>\n" +
				"<start_of_turn>user\nU2<end_of_turn>\n<start_of_turn>model\nA2<end_of_turn>",
			"<bos><start_of_turn>user\nS\n\nU1<end_of_turn>\n<start_of_turn>model\nA1<end_of_turn>\n" +
				"<start_of_turn>user\nU2<end_of_turn>\n<start_of_turn>model\nP"},
		{"role_colon",
			"<bos>System: S\n\nUser: U1\n\nAssistant: A1\n\nUser: U2\n\nAssistant: A2\n\nUser:",
			"<bos>System: S\n\nUser: U1\n\nAssistant: A1\n\nUser: U2\n\nAssistant:P"},
	}
	for _, tt := range tests {
		t.Run(tt.renderer, func(t *testing.T) {
			t.Parallel()
			r, tok := fakeRenderer(t, tt.renderer)
			ex, err := r.Supervised(fiveTurns, chat.LastAssistantMessage)
			require.NoError(t, err)
			assert.Equal(t, tt.full, text(t, tok, ex.Tokens))
			prompt, err := r.GenerationPrompt(fiveTurns[:4], "P")
			require.NoError(t, err)
			assert.Equal(t, tt.prompt, text(t, tok, prompt))
		})
	}
}

// TestWeights checks, per TrainOn, which text is trained: a message's
// output (its text and end-of-turn token) when selected, headers only with
// AllTokens, never BOS.
func TestWeights(t *testing.T) {
	trainable := func(flags ...bool) []chat.Message {
		out := make([]chat.Message, len(fiveTurns))
		copy(out, fiveTurns)
		for i := range out {
			out[i].Trainable = chat.Bool(flags[i])
		}
		return out
	}
	qwenA2 := "<think>\n\n</think>\n\nA2<|im_end|>"
	tests := []struct {
		renderer string
		on       chat.TrainOn
		msgs     []chat.Message
		want     string
	}{
		{"qwen3", "", fiveTurns, qwenA2},
		{"qwen3", chat.LastAssistantMessage, fiveTurns, qwenA2},
		{"qwen3", chat.LastAssistantTurn, fiveTurns, qwenA2},
		{"qwen3", chat.AllAssistantMessages, fiveTurns, "A1<|im_end|>|" + qwenA2},
		{"qwen3", chat.AllMessages, fiveTurns, "S<|im_end|>|U1<|im_end|>|A1<|im_end|>|U2<|im_end|>|" + qwenA2},
		{"qwen3", chat.AllUserAndSystemMessages, fiveTurns, "S<|im_end|>|U1<|im_end|>|U2<|im_end|>"},
		{"qwen3", chat.Customized, trainable(false, true, true, false, false), "U1<|im_end|>|A1<|im_end|>"},
		{"qwen3", chat.AllTokens, fiveTurns, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n" +
			"<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n" + qwenA2},
		// The prompt ends in the empty think block, so it is not trained.
		{"qwen3_disable_thinking", chat.LastAssistantMessage, fiveTurns, "A2<|im_end|>"},
		{"qwen3_disable_thinking", chat.AllAssistantMessages, fiveTurns, "A1<|im_end|>|" + qwenA2},
		{"llama3", chat.LastAssistantMessage, fiveTurns, "A2<|eot_id|>"},
		{"llama3", chat.AllAssistantMessages, fiveTurns, "A1<|eot_id|>|A2<|eot_id|>"},
		{"llama3", chat.AllTokens, fiveTurns, "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nU1<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nA1<|eot_id|>" +
			"<|start_header_id|>user<|end_header_id|>\n\nU2<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nA2<|eot_id|>"},
		{"deepseek_v3", chat.AllMessages, fiveTurns, "S|U1|A1<｜end▁of▁sentence｜>|U2|A2<｜end▁of▁sentence｜>"},
		{"deepseek_v3", chat.LastAssistantTurn, fiveTurns, "A2<｜end▁of▁sentence｜>"},
		{"gemma3", chat.AllUserAndSystemMessages, fiveTurns, "S\n\nU1<end_of_turn>|U2<end_of_turn>"},
		{"gemma3", chat.AllAssistantMessages, fiveTurns, "A1<end_of_turn>|A2<end_of_turn>"},
		{"role_colon", chat.LastAssistantMessage, fiveTurns, " A2\n\nUser:"},
		{"role_colon", chat.AllAssistantMessages, fiveTurns, " A1\n\n| A2\n\nUser:"},
		{"role_colon", chat.AllTokens, fiveTurns, "System: S\n\nUser: U1\n\nAssistant: A1\n\nUser: U2\n\nAssistant: A2\n\nUser:"},
	}
	for _, tt := range tests {
		t.Run(tt.renderer+"/"+string(tt.on), func(t *testing.T) {
			t.Parallel()
			r, tok := fakeRenderer(t, tt.renderer)
			ex, err := r.Supervised(tt.msgs, tt.on)
			require.NoError(t, err)
			require.Len(t, ex.Weights, len(ex.Tokens))
			assert.Equal(t, tt.want, runs(t, tok, ex))
		})
	}
}

// TestLastAssistantTurnWithTools trains every assistant message after the
// last user message, tool calls included, but not the tool output.
func TestLastAssistantTurnWithTools(t *testing.T) {
	r, tok := fakeRenderer(t, "qwen3")
	msgs := []chat.Message{
		{Role: chat.RoleUser, Content: "Q"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Name: "f", Arguments: `{"x":1}`}}},
		{Role: chat.RoleTool, Content: "R"},
		{Role: chat.RoleAssistant, Content: "A"},
	}
	ex, err := r.Supervised(msgs, chat.LastAssistantTurn)
	require.NoError(t, err)
	assert.Equal(t, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call><|im_end|>|<think>\n\n</think>\n\nA<|im_end|>",
		runs(t, tok, ex))
}

func TestConversationErrors(t *testing.T) {
	user := chat.Message{Role: chat.RoleUser, Content: "hi"}
	asst := chat.Message{Role: chat.RoleAssistant, Content: "yo"}
	for _, name := range chat.Names() {
		if name == "jinja" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, _ := fakeRenderer(t, name)

			_, err := r.GenerationPrompt(nil, "")
			assert.ErrorIs(t, err, chat.ErrEmptyConversation)
			_, err = r.Supervised(nil, chat.LastAssistantMessage)
			assert.ErrorIs(t, err, chat.ErrEmptyConversation)

			_, err = r.GenerationPrompt([]chat.Message{user, {Role: "robot", Content: "beep"}}, "")
			var re *chat.RoleError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, "robot", re.Role)
			assert.Equal(t, 1, re.Index)
			assert.Contains(t, re.Accepted, chat.RoleAssistant)
			assert.Contains(t, err.Error(), `"robot"`)
			assert.Contains(t, err.Error(), "user, assistant")

			_, err = r.Supervised([]chat.Message{user, asst, user}, chat.LastAssistantMessage)
			assert.ErrorIs(t, err, chat.ErrNothingToTrain)

			_, err = r.Supervised([]chat.Message{user, asst}, "everything")
			assert.ErrorContains(t, err, "unknown TrainOn")

			withFlag := []chat.Message{user, {Role: chat.RoleAssistant, Content: "yo", Trainable: chat.Bool(true)}}
			_, err = r.Supervised(withFlag, chat.LastAssistantMessage)
			assert.ErrorContains(t, err, "Trainable")
			_, err = r.Supervised([]chat.Message{user, asst}, chat.Customized)
			assert.ErrorContains(t, err, "Trainable on every message")
		})
	}
}

func TestFamilyRefusals(t *testing.T) {
	user := chat.Message{Role: chat.RoleUser, Content: "hi"}
	tests := []struct {
		renderer string
		msgs     []chat.Message
		want     error
		contains string
	}{
		{"llama3", []chat.Message{user, {Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Name: "f", Arguments: "{}"}}}},
			chat.ErrUnsupported, "tool calls"},
		{"gemma3", []chat.Message{user, {Role: chat.RoleAssistant, Content: "a", Reasoning: "r"}}, chat.ErrUnsupported, "reasoning"},
		{"gemma3", []chat.Message{user, user}, nil, "must alternate"},
		{"gemma3", []chat.Message{{Role: chat.RoleAssistant, Content: "a"}}, nil, "must alternate"},
		{"gemma3", []chat.Message{{Role: chat.RoleSystem, Content: "s"}}, chat.ErrUnsupported, "no"},
		{"deepseek_v3", []chat.Message{user, {Role: chat.RoleSystem, Content: "s"}}, nil, "only as the first message"},
		{"qwen3", []chat.Message{{Role: chat.RoleUser, Content: "u", Reasoning: "r"}}, chat.ErrUnsupported, "only assistant"},
		{"role_colon", []chat.Message{user, {Role: chat.RoleAssistant, Content: "a", Reasoning: "r"}}, chat.ErrUnsupported, "reasoning"},
	}
	for _, tt := range tests {
		r, _ := fakeRenderer(t, tt.renderer)
		_, err := r.GenerationPrompt(tt.msgs, "")
		require.Error(t, err, tt.renderer)
		if tt.want != nil {
			assert.ErrorIs(t, err, tt.want, tt.renderer)
		}
		assert.ErrorContains(t, err, tt.contains, tt.renderer)
	}

	// A disabled-thinking prompt closes the think block: a final turn that
	// reasoned is refused for training.
	r, _ := fakeRenderer(t, "qwen3_disable_thinking")
	_, err := r.Supervised([]chat.Message{user, {Role: chat.RoleAssistant, Content: "a", Reasoning: "r"}}, chat.LastAssistantMessage)
	assert.ErrorIs(t, err, chat.ErrUnsupported)

	_, err = chat.New("gpt2", newFakeTokenizer(), fakeConfig)
	assert.ErrorIs(t, err, chat.ErrUnknownRenderer)
	assert.ErrorContains(t, err, "qwen3_disable_thinking")

	// A tokenizer without the family's control tokens.
	empty := &fakeTokenizer{byText: map[string]int{}, byID: map[int]string{}, special: map[int]bool{}}
	for _, name := range []string{"qwen3", "llama3", "deepseek_v3", "gemma3"} {
		_, err := chat.New(name, empty, fakeConfig)
		assert.ErrorContains(t, err, "has no token", name)
	}
	_, err = chat.New("jinja", empty, fakeConfig)
	assert.ErrorIs(t, err, chat.ErrNoTemplate)
}

func TestParse(t *testing.T) {
	tests := []struct {
		renderer   string
		completion string // fake-tokenized text
		extra      []int  // ids appended
		want       chat.Message
		term       chat.Termination
	}{
		{"qwen3", "<think>\nHmm.\n</think>\n\nAnswer.<|im_end|>", nil,
			chat.Message{Content: "Answer.", Reasoning: "Hmm."}, chat.StopSequence},
		{"qwen3", "Answer.<|endoftext|>", nil, chat.Message{Content: "Answer."}, chat.EOS},
		{"qwen3", "<think>\nstill thinking", nil, chat.Message{Reasoning: "still thinking"}, chat.Malformed},
		{"qwen3", "Answer.<|im_end|>\n", nil, chat.Message{Content: "Answer."}, chat.Malformed},
		{"qwen3", "Checking.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}\n</tool_call>\n" +
			"<tool_call>\n{\"name\": \"g\", \"arguments\": \"{\\\"b\\\": true}\"}\n</tool_call><|im_end|>", nil,
			chat.Message{Content: "Checking.", ToolCalls: []chat.ToolCall{
				{Type: "function", Name: "f", Arguments: `{"a": [1, 2]}`},
				{Type: "function", Name: "g", Arguments: `{"b": true}`}}}, chat.StopSequence},
		{"qwen3", "<tool_call>\n{\"name\": \"f\", \"arguments\": {bad}}\n</tool_call><|im_end|>", nil,
			chat.Message{UnparsedToolCalls: []chat.UnparsedToolCall{{
				Raw:   "<tool_call>\n{\"name\": \"f\", \"arguments\": {bad}}\n</tool_call>",
				Error: "invalid JSON: invalid character 'b' looking for beginning of object key string"}}}, chat.StopSequence},
		{"qwen3", "x<tool_call>\n{\"name\": \"f\"", nil,
			chat.Message{Content: "x<tool_call>\n{\"name\": \"f\"", UnparsedToolCalls: []chat.UnparsedToolCall{{
				Raw: "<tool_call>\n{\"name\": \"f\"", Error: "<tool_call> opened without a matching </tool_call>"}}}, chat.Malformed},
		{"llama3", "Hi<|eot_id|>", nil, chat.Message{Content: "Hi"}, chat.StopSequence},
		{"llama3", "Hi<|end_of_text|>", nil, chat.Message{Content: "Hi"}, chat.EOS},
		{"llama3", "Hi", nil, chat.Message{Content: "Hi"}, chat.Malformed},
		{"deepseek_v3", "Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\": 1}\n```<｜tool▁call▁end｜>\n" +
			"<｜tool▁call▁begin｜>function<｜tool▁sep｜>g\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>", nil,
			chat.Message{Content: "Sure.", ToolCalls: []chat.ToolCall{
				{Type: "function", Name: "f", Arguments: `{"a": 1}`}, {Type: "function", Name: "g", Arguments: `{}`}}}, chat.StopSequence},
		{"gemma3", "Hi<end_of_turn>", nil, chat.Message{Content: "Hi"}, chat.StopSequence},
		{"gemma3", "Hi<eos>", nil, chat.Message{Content: "Hi"}, chat.EOS},
		{"role_colon", " Hi there.\n\nUser:", nil, chat.Message{Content: "Hi there."}, chat.StopSequence},
		{"role_colon", " Hi there.<eos>", nil, chat.Message{Content: "Hi there."}, chat.EOS},
		{"role_colon", " Hi there.", nil, chat.Message{Content: "Hi there."}, chat.Malformed},
		{"role_colon", " Hi.\n\nUser:<eos>", nil, chat.Message{Content: "Hi."}, chat.Malformed},
		{"role_colon", " Hi.\n\nUser: a\n\nUser:", nil, chat.Message{Content: "Hi."}, chat.Malformed},
	}
	for _, tt := range tests {
		r, tok := fakeRenderer(t, tt.renderer)
		ids := append(tok.Encode(tt.completion, encodeWithSpecial), tt.extra...)
		got, term, err := r.Parse(ids)
		require.NoError(t, err, "%s %q", tt.renderer, tt.completion)
		tt.want.Role = chat.RoleAssistant
		assert.Equal(t, tt.want, got, "%s %q", tt.renderer, tt.completion)
		assert.Equal(t, tt.term, term, "%s %q", tt.renderer, tt.completion)
	}

	r, _ := fakeRenderer(t, "qwen3")
	_, _, err := r.Parse([]int{999999})
	assert.ErrorContains(t, err, "out of range")

	assert.True(t, chat.StopSequence.Clean())
	assert.True(t, chat.EOS.Clean())
	assert.False(t, chat.Malformed.Clean())
	assert.Equal(t, "malformed", chat.Malformed.String())
}

func TestStops(t *testing.T) {
	tok := newFakeTokenizer()
	id := func(s string) int { i, _ := tok.TokenID(s); return i }
	tests := []struct {
		renderer string
		tokens   []int
		strs     []string
	}{
		{"qwen3", []int{id("<|im_end|>"), id("<|endoftext|>")}, nil},
		{"llama3", []int{id("<|eot_id|>"), id("<|end_of_text|>")}, nil},
		{"deepseek_v3", []int{id("<｜end▁of▁sentence｜>")}, nil},
		{"gemma3", []int{id("<end_of_turn>"), id("<eos>")}, nil},
		{"role_colon", nil, []string{"\n\nUser:"}},
	}
	for _, tt := range tests {
		r, _ := fakeRenderer(t, tt.renderer)
		assert.Equal(t, tt.tokens, r.StopTokens(), tt.renderer)
		assert.Equal(t, tt.strs, r.StopStrings(), tt.renderer)
	}
}

func TestSupervisedExamples(t *testing.T) {
	reasoned := []chat.Message{
		{Role: chat.RoleUser, Content: "U1"},
		{Role: chat.RoleAssistant, Content: "A1", Reasoning: "R1"},
		{Role: chat.RoleUser, Content: "U2"},
		{Role: chat.RoleAssistant, Content: "A2", Reasoning: "R2"},
	}
	r, tok := fakeRenderer(t, "qwen3")
	exs, err := chat.SupervisedExamples(r, reasoned, chat.AllAssistantMessages)
	require.NoError(t, err)
	require.Len(t, exs, 2)
	// Each turn is trained after the prompt it was sampled from, its
	// reasoning kept.
	assert.Equal(t, "<think>\nR1\n</think>\n\nA1<|im_end|>", runs(t, tok, exs[0]))
	assert.Equal(t, "<think>\nR2\n</think>\n\nA2<|im_end|>", runs(t, tok, exs[1]))
	_, err = chat.SupervisedExamples(r, reasoned, chat.AllMessages)
	assert.ErrorIs(t, err, chat.ErrUnsupported)

	r, _ = fakeRenderer(t, "qwen3_preserve_thinking")
	exs, err = chat.SupervisedExamples(r, reasoned, chat.AllAssistantMessages)
	require.NoError(t, err)
	require.Len(t, exs, 1)
	assert.Equal(t, "<think>\nR1\n</think>\n\nA1<|im_end|>|<think>\nR2\n</think>\n\nA2<|im_end|>", runs(t, tok, exs[0]))
}

func TestRoleErrorMessage(t *testing.T) {
	err := error(&chat.RoleError{Renderer: "qwen3", Index: 2, Role: "robot", Accepted: []string{"user", "assistant"}})
	assert.Equal(t, `chat: qwen3: message 2 has role "robot"; qwen3 renders roles user, assistant`, err.Error())
	var re *chat.RoleError
	assert.True(t, errors.As(err, &re))
}

// FuzzParse: any completion parses without panicking, for every family.
func FuzzParse(f *testing.F) {
	tok := newFakeTokenizer()
	f.Add([]byte("<think>\nR\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>"))
	f.Add([]byte("x<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```<｜end▁of▁sentence｜>"))
	f.Add([]byte(" a\n\nUser:<eos>"))
	var renderers []chat.Renderer
	for _, name := range chat.Names() {
		if name != "jinja" {
			r, err := chat.New(name, tok, fakeConfig)
			require.NoError(f, err)
			renderers = append(renderers, r)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ids := tok.Encode(string(data), encodeWithSpecial)
		for _, r := range renderers {
			m, term, err := r.Parse(ids)
			if err != nil {
				t.Fatalf("%s: %v", r.Name(), err)
			}
			if m.Role != chat.RoleAssistant || term < chat.Malformed || term > chat.EOS {
				t.Fatalf("%s: %+v %v", r.Name(), m, term)
			}
		}
	})
}
