package chat

import (
	"fmt"
	"slices"

	"github.com/tandemrl/tandem/tokenizer"
)

// NewLlama3 is the Llama 3 Instruct renderer, as tinker-cookbook's
// Llama3Renderer:
//
//	<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n…<|eot_id|>
//	<|start_header_id|>assistant<|end_header_id|>\n\n…<|eot_id|>
//
// Message text is encoded with special tokens matched, as tinker-cookbook
// and the template do (user text "<|eot_id|>" is the control token). No
// system date preamble and no trim (Meta's template adds "Cutting Knowledge
// Date…"; the template in the Llama 3.1 files tandem tests trims). Tool calls
// and reasoning are not supported: Llama 3's tool calls are bare JSON that
// cannot be told from an answer. It has the extension property.
func NewLlama3(tok Tokenizer) (Renderer, error) {
	x := &ids{tok: tok, name: "llama3"}
	l := &llama3{
		tok: tok,
		bot: x.must("<|begin_of_text|>"), startHeader: x.must("<|start_header_id|>"),
		endHeader: x.must("<|end_header_id|>"), eot: x.must("<|eot_id|>"),
	}
	for _, t := range []string{"<|end_of_text|>", "<|eom_id|>"} {
		if id, ok := x.optional(t); ok {
			l.eos = append(l.eos, id)
		}
	}
	if err := x.err(); err != nil {
		return nil, err
	}
	return &familyRenderer{family: l, tok: tok}, nil
}

type llama3 struct {
	tok                    Tokenizer
	bot                    int
	startHeader, endHeader int
	eot                    int
	eos                    []int
}

var llama3Roles = []string{RoleSystem, RoleUser, RoleAssistant, RoleTool, "ipython"}

func (l *llama3) Name() string               { return "llama3" }
func (l *llama3) StopTokens() []int          { return l.stops().tokens() }
func (l *llama3) StopStrings() []string      { return nil }
func (l *llama3) HasExtensionProperty() bool { return true }
func (l *llama3) bos() []int                 { return []int{l.bot} }
func (l *llama3) stops() stopSet             { return stopSet{endOfTurn: l.eot, eos: l.eos} }
func (l *llama3) enc(s string) []int         { return l.tok.Encode(s, tokenizer.EncodeOptions{}) }

func (l *llama3) check(c *convo) error {
	for i, m := range c.msgs {
		if !slices.Contains(llama3Roles, m.Role) {
			return &RoleError{Renderer: "llama3", Index: i, Role: m.Role, Accepted: llama3Roles}
		}
		if err := textOnly("llama3", i, m); err != nil {
			return err
		}
	}
	return nil
}

func (l *llama3) header(role string) []int {
	h := []int{l.startHeader}
	h = append(h, l.enc(role)...)
	h = append(h, l.endHeader)
	return append(h, l.enc("\n\n")...)
}

func (l *llama3) render(c *convo, i int) (piece, error) {
	m := c.msgs[i]
	return piece{header: l.header(m.Role), output: append(l.enc(m.Content), l.eot)}, nil
}

func (l *llama3) suffix(*convo) []int { return l.header(RoleAssistant) }

// Parse ends on <|eot_id|> (StopSequence), or <|end_of_text|> or <|eom_id|>
// (EOS).
func (l *llama3) Parse(completion []int) (Message, Termination, error) {
	text, term, err := decodeCompletion(l.tok, "llama3", completion, l.stops())
	return Message{Role: RoleAssistant, Content: text}, term, err
}

// textOnly rejects what a plain-text family cannot render.
func textOnly(name string, i int, m Message) error {
	switch {
	case m.Reasoning != "":
		return fmt.Errorf("%w: %s: message %d has reasoning, which %s has no format for", ErrUnsupported, name, i, name)
	case len(m.ToolCalls) > 0:
		return fmt.Errorf("%w: %s: message %d has tool calls, which %s does not render", ErrUnsupported, name, i, name)
	}
	return nil
}
