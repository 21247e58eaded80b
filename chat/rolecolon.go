package chat

import (
	"slices"
	"strings"

	"github.com/tandemrl/tandem/tokenizer"
)

// roleColonStop ends a role_colon assistant turn.
const roleColonStop = "\n\nUser:"

// NewRoleColon is the plain "User: …\n\nAssistant: …\n\n" format of
// tinker-cookbook's RoleColonRenderer, for base models: BOS (the
// tokenizer's, when it has one), then per message the header "Role:" and
// the output " {content}\n\n". A turn ends at the stop string "\n\nUser:";
// a supervised example whose final message is trained ends with "User:",
// weighted like that message, so the model learns to stop. It has the
// extension property. Reasoning and tool calls are not supported.
func NewRoleColon(tok Tokenizer, cfg tokenizer.Config) (Renderer, error) {
	x := &ids{tok: tok, name: "role_colon"}
	r := &roleColon{tok: tok}
	if id, ok := x.optional(cfg.BOSToken); ok {
		r.bosIDs = []int{id}
	}
	if id, ok := x.optional(cfg.EOSToken); ok {
		r.eos = id
		r.hasEOS = true
	}
	return &familyRenderer{family: r, tok: tok}, nil
}

type roleColon struct {
	tok    Tokenizer
	bosIDs []int
	eos    int
	hasEOS bool
}

var roleColonRoles = []string{RoleSystem, RoleUser, RoleAssistant, RoleTool}

func (r *roleColon) Name() string               { return "role_colon" }
func (r *roleColon) StopTokens() []int          { return nil }
func (r *roleColon) StopStrings() []string      { return []string{roleColonStop} }
func (r *roleColon) HasExtensionProperty() bool { return true }
func (r *roleColon) bos() []int                 { return r.bosIDs }
func (r *roleColon) enc(s string) []int         { return r.tok.Encode(s, tokenizer.EncodeOptions{}) }

func (r *roleColon) check(c *convo) error {
	for i, m := range c.msgs {
		if !slices.Contains(roleColonRoles, m.Role) {
			return &RoleError{Renderer: "role_colon", Index: i, Role: m.Role, Accepted: roleColonRoles}
		}
		if err := textOnly("role_colon", i, m); err != nil {
			return err
		}
	}
	return nil
}

func (r *roleColon) header(role string) []int {
	return r.enc(strings.ToUpper(role[:1]) + role[1:] + ":")
}

func (r *roleColon) render(c *convo, i int) (piece, error) {
	m := c.msgs[i]
	p := piece{header: r.header(m.Role), output: r.enc(" " + m.Content + "\n\n")}
	if m.Role == RoleAssistant {
		p.overlap = r.enc("User:")
	}
	return p, nil
}

func (r *roleColon) suffix(*convo) []int { return r.header(RoleAssistant) }

// Parse reads the text up to "\n\nUser:" (StopSequence). A completion that
// ends in the tokenizer's EOS without the stop string is EOS; one with
// neither, with the stop string and EOS, or with the stop string twice, is
// Malformed.
func (r *roleColon) Parse(completion []int) (Message, Termination, error) {
	eos := false
	if r.hasEOS && len(completion) > 0 && completion[len(completion)-1] == r.eos {
		completion, eos = completion[:len(completion)-1], true
	}
	text, err := r.tok.Decode(completion, false)
	if err != nil {
		return Message{}, Malformed, err
	}
	parts := strings.Split(text, roleColonStop)
	content := strings.TrimSuffix(strings.TrimPrefix(parts[0], " "), "\n\n")
	term := Malformed
	switch {
	case len(parts) == 1 && eos:
		term = EOS
	case len(parts) == 2 && !eos:
		term = StopSequence
	}
	return Message{Role: RoleAssistant, Content: content}, term, nil
}
