package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tandemrl/tandem/tokenizer"
)

// Qwen3Options choose among the Qwen3 renderers.
type Qwen3Options struct {
	// DisableThinking ends the generation prompt in an empty think block
	// (<think>\n\n</think>\n\n), as the template does with
	// enable_thinking=False: "qwen3_disable_thinking".
	DisableThinking bool
	// PreserveThinking keeps every assistant message's reasoning and frames
	// every assistant message in <think>…</think>, so the renderer has the
	// extension property: "qwen3_preserve_thinking". The template (and the
	// default) keeps reasoning only after the last user query.
	PreserveThinking bool
}

// NewQwen3 is the Qwen3 renderer (Qwen3's hybrid-thinking chat format):
//
//	<|im_start|>system\n…<|im_end|>\n<|im_start|>user\n…<|im_end|>\n
//	<|im_start|>assistant\n<think>\n…\n</think>\n\n…<|im_end|>
//
// As in tinker-cookbook's Qwen3Renderer, the "\n" after <|im_end|> opens the
// next header (weight 0), so a trained turn ends on <|im_end|>; message text
// is encoded with special-token matching off. Tool messages are grouped into
// one user turn of <tool_response> blocks as the template groups them
// (tinker-cookbook gives each its own turn); tool calls are written as the
// template writes them.
func NewQwen3(tok Tokenizer, opts Qwen3Options) (Renderer, error) {
	name := "qwen3"
	switch {
	case opts.DisableThinking && opts.PreserveThinking:
		return nil, fmt.Errorf("chat: qwen3: DisableThinking and PreserveThinking exclude each other")
	case opts.DisableThinking:
		name = "qwen3_disable_thinking"
	case opts.PreserveThinking:
		name = "qwen3_preserve_thinking"
	}
	x := &ids{tok: tok, name: name}
	q := &qwen3{
		tok: tok, opts: opts, name: name,
		imStart: x.must("<|im_start|>"), imEnd: x.must("<|im_end|>"),
		think: x.must(thinkOpen), thinkEnd: x.must(thinkClose),
		toolResp: x.must("<tool_response>"), toolRespEnd: x.must("</tool_response>"),
	}
	if id, ok := x.optional("<|endoftext|>"); ok {
		q.eos = []int{id}
	}
	if err := x.err(); err != nil {
		return nil, err
	}
	return &familyRenderer{family: q, tok: tok}, nil
}

type qwen3 struct {
	tok                   Tokenizer
	opts                  Qwen3Options
	name                  string
	imStart, imEnd        int
	think, thinkEnd       int
	toolResp, toolRespEnd int
	eos                   []int
}

var qwen3Roles = []string{RoleSystem, RoleUser, RoleAssistant, RoleTool}

func (q *qwen3) Name() string               { return q.name }
func (q *qwen3) StopTokens() []int          { return q.stops().tokens() }
func (q *qwen3) StopStrings() []string      { return nil }
func (q *qwen3) HasExtensionProperty() bool { return q.opts.PreserveThinking }
func (q *qwen3) disablesThinking() bool     { return q.opts.DisableThinking }
func (q *qwen3) bos() []int                 { return nil }
func (q *qwen3) stops() stopSet             { return stopSet{endOfTurn: q.imEnd, eos: q.eos} }

// text encodes message text: special-token text is ordinary text, but
// non-special added tokens (<think>, <tool_call>) still match, as in
// tinker-cookbook's split_special_tokens=True encoding.
func (q *qwen3) text(s string) []int {
	return q.tok.Encode(s, tokenizer.EncodeOptions{SplitSpecialTokens: true})
}

// plain encodes the renderer's own markup text (role names, newlines).
func (q *qwen3) plain(s string) []int { return q.tok.Encode(s, tokenizer.EncodeOptions{}) }

func (q *qwen3) check(c *convo) error {
	for i, m := range c.msgs {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		default:
			return &RoleError{Renderer: q.name, Index: i, Role: m.Role, Accepted: qwen3Roles}
		}
		if m.Role != RoleAssistant && (m.Reasoning != "" || len(m.ToolCalls) > 0) {
			return fmt.Errorf("%w: %s: message %d (%s) has reasoning or tool calls; only assistant messages do",
				ErrUnsupported, q.name, i, m.Role)
		}
	}
	if q.opts.DisableThinking && c.lastUser < 0 {
		// The template frames no turn in a conversation without a user
		// message, but the prompt always opens (and closes) a block.
		last := c.msgs[len(c.msgs)-1]
		if last.Role == RoleAssistant && (last.Content != "" || len(last.ToolCalls) > 0) {
			return fmt.Errorf("%w: %s: the conversation has no user message, so the template writes no empty think "+
				"block on the final assistant turn, but the generation prompt always does", ErrUnsupported, q.name)
		}
	}
	return nil
}

func (q *qwen3) header(i int, role string) []int {
	var h []int
	if i > 0 {
		h = q.plain("\n")
	}
	h = append(h, q.imStart)
	return append(h, q.plain(role+"\n")...)
}

func (q *qwen3) render(c *convo, i int) (piece, error) {
	m := c.msgs[i]
	switch m.Role {
	case RoleTool:
		return q.renderTool(c, i), nil
	case RoleAssistant:
		return q.renderAssistant(c, i)
	}
	out := append(q.text(m.Content), q.imEnd)
	return piece{header: q.header(i, m.Role), output: out}, nil
}

// renderTool writes a run of tool messages as one user turn, as the template
// does: <|im_start|>user, then "\n<tool_response>\n…\n</tool_response>" per
// message, then <|im_end|>.
func (q *qwen3) renderTool(c *convo, i int) piece {
	var p piece
	var out []int
	if c.prevRole(i) == RoleTool {
		out = q.plain("\n")
	} else {
		p.header = q.header(i, RoleUser)
	}
	out = append(out, q.toolResp)
	out = append(out, q.text("\n"+c.msgs[i].Content+"\n")...)
	out = append(out, q.toolRespEnd)
	if c.nextRole(i) != RoleTool {
		out = append(out, q.imEnd)
	}
	p.output = out
	return p
}

func (q *qwen3) renderAssistant(c *convo, i int) (piece, error) {
	m := c.msgs[i]
	content, reasoning := m.Content, m.Reasoning
	if reasoning == "" && strings.Contains(content, thinkClose) {
		reasoning, content = splitThink(content)
	}
	var frame bool
	if q.opts.PreserveThinking {
		frame = c.lastUser >= 0
	} else {
		frame = i > c.lastQuery && (c.isLast(i) || reasoning != "")
	}
	if q.opts.DisableThinking && frame && reasoning != "" && c.isLast(i) {
		return piece{}, fmt.Errorf("%w: %s closes the think block in its prompt, which tells the model not to reason, "+
			"but the final assistant message (%d) has reasoning; use the thinking renderer or drop the reasoning",
			ErrUnsupported, q.name, i)
	}
	var out []int
	if frame {
		out = append(out, q.think)
		out = append(out, q.text("\n"+strings.Trim(reasoning, "\n")+"\n")...)
		out = append(out, q.thinkEnd)
		out = append(out, q.text("\n\n"+strings.TrimLeft(content, "\n")+q.toolCallText(content, m.ToolCalls))...)
	} else {
		out = q.text(content + q.toolCallText(content, m.ToolCalls))
	}
	out = append(out, q.imEnd)
	return piece{header: q.header(i, RoleAssistant), output: out}, nil
}

// toolCallText writes the calls as the template does: "\n" before the first
// when there is text, between calls, and each as
// <tool_call>\n{"name": "…", "arguments": …}\n</tool_call> with the
// arguments re-serialised as Python's json.dumps writes them.
func (q *qwen3) toolCallText(content string, calls []ToolCall) string {
	var b strings.Builder
	for j, tc := range calls {
		if j > 0 || content != "" {
			b.WriteString("\n")
		}
		args, err := pythonJSON(tc.Arguments)
		if err != nil {
			args = tc.Arguments
		}
		b.WriteString(toolCallOpen + "\n{\"name\": \"" + tc.Name + "\", \"arguments\": " + args + "}\n" + toolCallClose)
	}
	return b.String()
}

func (q *qwen3) suffix(c *convo) []int {
	h := q.header(len(c.msgs), RoleAssistant)
	if q.opts.DisableThinking {
		h = append(h, q.think)
		h = append(h, q.plain("\n\n")...)
		h = append(h, q.thinkEnd)
		h = append(h, q.plain("\n\n")...)
	}
	return h
}

// Parse splits off the <think> block (Reasoning) and the <tool_call> blocks
// (ToolCalls, UnparsedToolCalls). It ends on <|im_end|> (StopSequence) or
// <|endoftext|> (EOS).
func (q *qwen3) Parse(completion []int) (Message, Termination, error) {
	text, term, err := decodeCompletion(q.tok, q.name, completion, q.stops())
	if err != nil {
		return Message{}, term, err
	}
	m := Message{Role: RoleAssistant}
	m.Reasoning, text = splitThink(text)
	m.Content, m.ToolCalls, m.UnparsedToolCalls = splitToolCalls(text)
	return m, term, nil
}

// Qwen3ToolSystem is the system message through which Qwen3's template
// offers tools: the system text (when not ""), then the tool list as the
// template writes it for tools=[...]. Each tool is a JSON object, usually
// {"type": "function", "function": {"name", "description", "parameters"}},
// written as transformers' tojson writes it (key order kept). Put it first.
func Qwen3ToolSystem(system string, tools ...json.RawMessage) (Message, error) {
	var b strings.Builder
	if system != "" {
		b.WriteString(system + "\n\n")
	}
	b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
	for i, t := range tools {
		s, err := pythonJSON(string(t))
		if err != nil {
			return Message{}, fmt.Errorf("chat: qwen3: tool %d: %w", i, err)
		}
		b.WriteString("\n" + s)
	}
	b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments " +
		"within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": " +
		"<args-json-object>}\n</tool_call>")
	return Message{Role: RoleSystem, Content: b.String()}, nil
}
