package chat

import (
	"fmt"

	"github.com/tandemrl/tandem/tokenizer"
)

// NewGemma3 is the Gemma 3 instruction-tuned renderer, written from its
// chat template (tinker-cookbook has none):
//
//	<bos><start_of_turn>user\n{system}\n\n…<end_of_turn>\n
//	<start_of_turn>model\n…<end_of_turn>
//
// An optional first system message is folded into the first user turn;
// then user and assistant ("model") turns must alternate, starting with
// user, as the template demands. As with Qwen3, the "\n" after <end_of_turn>
// opens the next header. Content is not trimmed (the template trims).
// Reasoning and tool calls are not supported. It has the extension property.
func NewGemma3(tok Tokenizer) (Renderer, error) {
	x := &ids{tok: tok, name: "gemma3"}
	g := &gemma3{tok: tok, bot: x.must("<bos>"), start: x.must("<start_of_turn>"), end: x.must("<end_of_turn>")}
	if id, ok := x.optional("<eos>"); ok {
		g.eos = []int{id}
	}
	if err := x.err(); err != nil {
		return nil, err
	}
	return &familyRenderer{family: g, tok: tok}, nil
}

type gemma3 struct {
	tok        Tokenizer
	bot        int
	start, end int
	eos        []int
}

var gemma3Roles = []string{RoleSystem, RoleUser, RoleAssistant}

func (g *gemma3) Name() string               { return "gemma3" }
func (g *gemma3) StopTokens() []int          { return g.stops().tokens() }
func (g *gemma3) StopStrings() []string      { return nil }
func (g *gemma3) HasExtensionProperty() bool { return true }
func (g *gemma3) bos() []int                 { return []int{g.bot} }
func (g *gemma3) stops() stopSet             { return stopSet{endOfTurn: g.end, eos: g.eos} }
func (g *gemma3) enc(s string) []int         { return g.tok.Encode(s, tokenizer.EncodeOptions{}) }

// first is the index of the first turn (after the system message).
func (g *gemma3) first(c *convo) int {
	if len(c.msgs) > 0 && c.msgs[0].Role == RoleSystem {
		return 1
	}
	return 0
}

func (g *gemma3) check(c *convo) error {
	first := g.first(c)
	for i, m := range c.msgs {
		if m.Role != RoleSystem && m.Role != RoleUser && m.Role != RoleAssistant {
			return &RoleError{Renderer: "gemma3", Index: i, Role: m.Role, Accepted: gemma3Roles}
		}
		if err := textOnly("gemma3", i, m); err != nil {
			return err
		}
		want := RoleUser
		if (i-first)%2 == 1 {
			want = RoleAssistant
		}
		if i >= first && m.Role != want {
			return &RoleError{Renderer: "gemma3", Index: i, Role: m.Role, Accepted: gemma3Roles,
				Reason: fmt.Sprintf("conversation roles must alternate user/assistant/user/assistant/... "+
					"after an optional first system message, so message %d must be %s", i, want)}
		}
	}
	if first == 1 && len(c.msgs) == 1 {
		return fmt.Errorf("%w: gemma3 folds the system message into the first user turn, and there is none", ErrUnsupported)
	}
	return nil
}

func (g *gemma3) header(c *convo, i int, role string) []int {
	var h []int
	if i > g.first(c) {
		h = g.enc("\n")
	}
	h = append(h, g.start)
	return append(h, g.enc(role+"\n")...)
}

func (g *gemma3) render(c *convo, i int) (piece, error) {
	m := c.msgs[i]
	switch {
	case m.Role == RoleSystem:
		return piece{}, nil // written with the first user turn
	case m.Role == RoleAssistant:
		return piece{header: g.header(c, i, "model"), output: append(g.enc(m.Content), g.end)}, nil
	}
	text := m.Content
	if i == 1 && g.first(c) == 1 {
		text = c.msgs[0].Content + "\n\n" + text
	}
	return piece{header: g.header(c, i, m.Role), output: append(g.enc(text), g.end)}, nil
}

func (g *gemma3) suffix(c *convo) []int { return g.header(c, len(c.msgs), "model") }

// Parse ends on <end_of_turn> (StopSequence) or <eos> (EOS).
func (g *gemma3) Parse(completion []int) (Message, Termination, error) {
	text, term, err := decodeCompletion(g.tok, "gemma3", completion, g.stops())
	return Message{Role: RoleAssistant, Content: text}, term, err
}
