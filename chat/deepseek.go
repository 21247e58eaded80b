package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tandemrl/tandem/tokenizer"
)

// DeepSeek-V3's markers (fullwidth bars, "▁" for spaces).
const (
	dsBOS          = "<｜begin▁of▁sentence｜>"
	dsEOS          = "<｜end▁of▁sentence｜>"
	dsUser         = "<｜User｜>"
	dsAssistant    = "<｜Assistant｜>"
	dsCallsBegin   = "<｜tool▁calls▁begin｜>"
	dsCallsEnd     = "<｜tool▁calls▁end｜>"
	dsCallBegin    = "<｜tool▁call▁begin｜>"
	dsCallEnd      = "<｜tool▁call▁end｜>"
	dsSep          = "<｜tool▁sep｜>"
	dsOutputsBegin = "<｜tool▁outputs▁begin｜>"
	dsOutputsEnd   = "<｜tool▁outputs▁end｜>"
	dsOutputBegin  = "<｜tool▁output▁begin｜>"
	dsOutputEnd    = "<｜tool▁output▁end｜>"
)

// NewDeepSeekV3 is the DeepSeek-V3 renderer, for the V3 chat template (no
// think block):
//
//	<｜begin▁of▁sentence｜>{system}<｜User｜>…<｜Assistant｜>…<｜end▁of▁sentence｜>
//
// The system message must come first (it is written bare after BOS). Tool
// calls are <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>name
// \n```json\n{args}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>, closed by
// <｜end▁of▁sentence｜>; a run of tool messages is
// <｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>…<｜tool▁output▁end｜>(\n…)*
// <｜tool▁outputs▁end｜>, after which the assistant answers without a role
// marker. It has the extension property.
func NewDeepSeekV3(tok Tokenizer) (Renderer, error) {
	x := &ids{tok: tok, name: "deepseek_v3"}
	d := &deepseek{tok: tok, id: map[string]int{}}
	for _, t := range []string{dsBOS, dsEOS, dsUser, dsAssistant, dsCallsBegin, dsCallsEnd, dsCallBegin,
		dsCallEnd, dsSep, dsOutputsBegin, dsOutputsEnd, dsOutputBegin, dsOutputEnd} {
		d.id[t] = x.must(t)
	}
	if err := x.err(); err != nil {
		return nil, err
	}
	return &familyRenderer{family: d, tok: tok}, nil
}

type deepseek struct {
	tok Tokenizer
	id  map[string]int
}

var deepseekRoles = []string{RoleSystem, RoleUser, RoleAssistant, RoleTool}

func (d *deepseek) Name() string               { return "deepseek_v3" }
func (d *deepseek) StopTokens() []int          { return d.stops().tokens() }
func (d *deepseek) StopStrings() []string      { return nil }
func (d *deepseek) HasExtensionProperty() bool { return true }
func (d *deepseek) bos() []int                 { return []int{d.id[dsBOS]} }
func (d *deepseek) stops() stopSet             { return stopSet{endOfTurn: d.id[dsEOS]} }
func (d *deepseek) enc(s string) []int         { return d.tok.Encode(s, tokenizer.EncodeOptions{}) }

func (d *deepseek) check(c *convo) error {
	for i, m := range c.msgs {
		switch {
		case m.Role == RoleSystem && i > 0:
			return &RoleError{Renderer: "deepseek_v3", Index: i, Role: m.Role, Accepted: deepseekRoles,
				Reason: "deepseek_v3 renders a system message only as the first message"}
		case m.Role != RoleSystem && m.Role != RoleUser && m.Role != RoleAssistant && m.Role != RoleTool:
			return &RoleError{Renderer: "deepseek_v3", Index: i, Role: m.Role, Accepted: deepseekRoles}
		case m.Reasoning != "":
			return fmt.Errorf("%w: deepseek_v3: message %d has reasoning, which the V3 format has no block for", ErrUnsupported, i)
		case len(m.ToolCalls) > 0 && m.Role != RoleAssistant:
			return fmt.Errorf("%w: deepseek_v3: message %d (%s) has tool calls; only assistant messages do", ErrUnsupported, i, m.Role)
		}
	}
	return nil
}

func (d *deepseek) render(c *convo, i int) (piece, error) {
	m := c.msgs[i]
	var p piece
	switch m.Role {
	case RoleSystem:
		p.output = d.enc(m.Content)
	case RoleUser:
		p.header = []int{d.id[dsUser]}
		p.output = d.enc(m.Content)
	case RoleAssistant:
		if c.prevRole(i) != RoleTool {
			p.header = []int{d.id[dsAssistant]}
		}
		p.output = append(d.enc(m.Content), d.toolCalls(m.ToolCalls)...)
		p.output = append(p.output, d.id[dsEOS])
	case RoleTool:
		var out []int
		if c.prevRole(i) == RoleTool {
			out = d.enc("\n")
		} else {
			out = []int{d.id[dsOutputsBegin]}
		}
		out = append(out, d.id[dsOutputBegin])
		out = append(out, d.enc(m.Content)...)
		out = append(out, d.id[dsOutputEnd])
		if c.nextRole(i) != RoleTool {
			out = append(out, d.id[dsOutputsEnd])
		}
		p.output = out
	}
	return p, nil
}

func (d *deepseek) toolCalls(calls []ToolCall) []int {
	if len(calls) == 0 {
		return nil
	}
	out := []int{d.id[dsCallsBegin]}
	for j, tc := range calls {
		if j > 0 {
			out = append(out, d.enc("\n")...)
		}
		typ := tc.Type
		if typ == "" {
			typ = "function"
		}
		out = append(out, d.id[dsCallBegin])
		out = append(out, d.enc(typ)...)
		out = append(out, d.id[dsSep])
		out = append(out, d.enc(tc.Name+"\n```json\n"+tc.Arguments+"\n```")...)
		out = append(out, d.id[dsCallEnd])
	}
	return append(out, d.id[dsCallsEnd])
}

// suffix: after tool outputs the assistant answers without a role marker.
func (d *deepseek) suffix(c *convo) []int {
	if len(c.msgs) > 0 && c.msgs[len(c.msgs)-1].Role == RoleTool {
		return nil
	}
	return []int{d.id[dsAssistant]}
}

// Parse ends on <｜end▁of▁sentence｜> (StopSequence) and reads the tool-call
// block.
func (d *deepseek) Parse(completion []int) (Message, Termination, error) {
	text, term, err := decodeCompletion(d.tok, "deepseek_v3", completion, d.stops())
	if err != nil {
		return Message{}, term, err
	}
	m := Message{Role: RoleAssistant, Content: text}
	before, block, ok := strings.Cut(text, dsCallsBegin)
	if !ok {
		return m, term, nil
	}
	m.Content = before
	block, rest, closed := strings.Cut(block, dsCallsEnd)
	if !closed {
		m.UnparsedToolCalls = append(m.UnparsedToolCalls, UnparsedToolCall{Raw: dsCallsBegin + block,
			Error: dsCallsBegin + " opened without a matching " + dsCallsEnd})
	}
	m.Content += rest
	for _, call := range strings.Split(block, dsCallBegin)[1:] {
		body, _, ok := strings.Cut(call, dsCallEnd)
		raw := dsCallBegin + call
		if !ok {
			m.UnparsedToolCalls = append(m.UnparsedToolCalls, UnparsedToolCall{Raw: raw, Error: dsCallBegin + " without " + dsCallEnd})
			continue
		}
		typ, rest, ok1 := strings.Cut(body, dsSep)
		name, args, ok2 := strings.Cut(rest, "\n```json\n")
		args, ok3 := strings.CutSuffix(args, "\n```")
		if !ok1 || !ok2 || !ok3 || !json.Valid([]byte(args)) {
			m.UnparsedToolCalls = append(m.UnparsedToolCalls, UnparsedToolCall{Raw: raw,
				Error: "want type" + dsSep + "name\\n```json\\n{arguments}\\n``` with valid JSON arguments"})
			continue
		}
		m.ToolCalls = append(m.ToolCalls, ToolCall{Type: typ, Name: name, Arguments: args})
	}
	return m, term, nil
}
