package chat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tandemrl/tandem/tokenizer"
)

// piece is one message rendered: a header (role markers, never trained but
// with AllTokens), an output (what the model produces: text and end-of-turn
// token) and an overlap, appended after the output of the last message of a
// supervised example only (role_colon's "User:", which completes its stop
// string "\n\nUser:" and would otherwise repeat the next header).
type piece struct {
	header, output, overlap []int
}

// convo is the conversation a family renders, with what several families
// compute from it once.
type convo struct {
	msgs     []Message
	lastUser int // index of the last user message, -1 when none
	// lastQuery is Qwen3's template's ns.last_query_index: the last user
	// message that is not a wrapped <tool_response>, else the final index.
	lastQuery int
}

func newConvo(msgs []Message) *convo {
	c := &convo{msgs: msgs, lastUser: lastRole(msgs, RoleUser), lastQuery: len(msgs) - 1}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == RoleUser && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			c.lastQuery = i
			break
		}
	}
	return c
}

func (c *convo) isLast(i int) bool { return i == len(c.msgs)-1 }

// prevRole and nextRole are the neighbours' roles ("" at the ends).
func (c *convo) prevRole(i int) string {
	if i > 0 {
		return c.msgs[i-1].Role
	}
	return ""
}

func (c *convo) nextRole(i int) string {
	if i+1 < len(c.msgs) {
		return c.msgs[i+1].Role
	}
	return ""
}

func lastRole(msgs []Message, role string) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == role {
			return i
		}
	}
	return -1
}

// family is the hand-written part of a renderer; familyRenderer assembles
// prompts and examples from it the way tinker-cookbook's Renderer base class
// does.
type family interface {
	Name() string
	StopTokens() []int
	StopStrings() []string
	Parse(completion []int) (Message, Termination, error)
	HasExtensionProperty() bool

	// bos is what starts every sequence.
	bos() []int
	// check rejects a conversation the family cannot render.
	check(c *convo) error
	// render renders message i.
	render(c *convo, i int) (piece, error)
	// suffix is the assistant header that follows c's messages in a
	// generation prompt.
	suffix(c *convo) []int
}

// thinkingDisabler is a family whose prompt closes the think block; it
// refuses to train a turn that reasoned after such a prompt.
type thinkingDisabler interface{ disablesThinking() bool }

// familyRenderer is a Renderer made of a family.
type familyRenderer struct {
	family
	tok Tokenizer
}

var _ Renderer = (*familyRenderer)(nil)

func (r *familyRenderer) GenerationPrompt(messages []Message, prefill string) ([]int, error) {
	if len(messages) == 0 {
		return nil, fmt.Errorf("%w: %s needs at least one message to prompt from", ErrEmptyConversation, r.Name())
	}
	c := newConvo(messages)
	if err := r.check(c); err != nil {
		return nil, err
	}
	ids, err := r.prompt(c)
	if err != nil {
		return nil, err
	}
	if prefill != "" {
		ids = append(ids, r.tok.Encode(prefill, tokenizer.EncodeOptions{})...)
	}
	return ids, nil
}

// prompt is BOS, every message of c and the assistant header (c may be
// empty).
func (r *familyRenderer) prompt(c *convo) ([]int, error) {
	ids := slices.Clone(r.bos())
	for i := range c.msgs {
		p, err := r.render(c, i)
		if err != nil {
			return nil, err
		}
		ids = append(ids, p.header...)
		ids = append(ids, p.output...)
	}
	return append(ids, r.suffix(c)...), nil
}

func (r *familyRenderer) Supervised(messages []Message, on TrainOn) (Example, error) {
	on, err := on.normalize()
	if err != nil {
		return Example{}, err
	}
	n := len(messages)
	if n == 0 {
		return Example{}, fmt.Errorf("%w: a supervised example needs messages", ErrEmptyConversation)
	}
	if err := checkTrainable(messages, on); err != nil {
		return Example{}, err
	}
	c := newConvo(messages)
	if err := r.check(c); err != nil {
		return Example{}, err
	}
	turnStart := lastRole(messages[:n-1], RoleUser) + 1

	var ex Example
	add := func(ids []int, w float32) {
		ex.Tokens = append(ex.Tokens, ids...)
		for range ids {
			ex.Weights = append(ex.Weights, w)
		}
	}
	add(r.bos(), 0)
	for i, m := range messages {
		p, err := r.render(c, i)
		if err != nil {
			return Example{}, err
		}
		var hw, ow float32
		if on == AllTokens {
			hw = 1
		}
		if trained(on, m, i == n-1, i >= turnStart) {
			ow = 1
		}
		add(p.header, hw)
		add(p.output, ow)
		if i == n-1 {
			add(p.overlap, ow)
		}
	}
	if err := r.trainAfterPrompt(messages, on, &ex); err != nil {
		return Example{}, err
	}
	if !slices.ContainsFunc(ex.Weights, func(w float32) bool { return w > 0 }) {
		return Example{}, fmt.Errorf("%w: %s selects no message of this conversation (last role %q)",
			ErrNothingToTrain, on, messages[n-1].Role)
	}
	return ex, nil
}

// trainAfterPrompt withholds loss from what the generation prompt supplies
// (Qwen3's disabled-thinking prompt ends in an empty think block, which the
// example's trained output starts with), as tinker-cookbook's
// _train_after_the_generation_prompt does.
func (r *familyRenderer) trainAfterPrompt(msgs []Message, on TrainOn, ex *Example) error {
	boundary := -1
	switch on {
	case LastAssistantMessage:
		boundary = len(msgs) - 1
	case LastAssistantTurn:
		boundary = lastRole(msgs, RoleUser) + 1
	}
	if boundary <= 0 || boundary >= len(msgs) || msgs[boundary].Role != RoleAssistant {
		return nil
	}
	c := newConvo(msgs[:boundary])
	if err := r.check(c); err != nil {
		return nil // the prefix alone is not a prompt this family renders
	}
	prompt, err := r.prompt(c)
	if err != nil {
		return err
	}
	if len(prompt) > len(ex.Tokens) || !slices.Equal(prompt, ex.Tokens[:len(prompt)]) {
		if d, ok := r.family.(thinkingDisabler); ok && d.disablesThinking() {
			return fmt.Errorf("%w: %s closes the think block in its prompt, which tells the model not to reason, "+
				"but message %d reasons; use the thinking renderer or drop the reasoning", ErrUnsupported, r.Name(), boundary)
		}
		return nil
	}
	for i := range prompt {
		ex.Weights[i] = 0
	}
	return nil
}

func trained(on TrainOn, m Message, last, inLastTurn bool) bool {
	assistant := m.Role == RoleAssistant
	switch on {
	case LastAssistantMessage:
		return last && assistant
	case LastAssistantTurn:
		return assistant && inLastTurn
	case AllAssistantMessages:
		return assistant
	case AllMessages, AllTokens:
		return true
	case AllUserAndSystemMessages:
		return m.Role == RoleUser || m.Role == RoleSystem
	case Customized:
		return m.Trainable != nil && *m.Trainable
	}
	return false
}

func checkTrainable(msgs []Message, on TrainOn) error {
	for i, m := range msgs {
		switch {
		case on == Customized && m.Trainable == nil:
			return fmt.Errorf("chat: %s needs Trainable on every message; message %d (%s) has none", on, i, m.Role)
		case on != Customized && m.Trainable != nil:
			return fmt.Errorf("chat: message %d sets Trainable, which only %s reads; train on %s or clear it", i, Customized, Customized)
		}
	}
	return nil
}

// SupervisedExamples is the examples that train a conversation the way its
// prompts were seen. A renderer with the extension property gives one
// example. One without it (qwen3: history loses its reasoning) gives one
// example per trained assistant message, each ending at that message; only
// LastAssistantMessage, LastAssistantTurn and AllAssistantMessages can be
// split that way.
func SupervisedExamples(r Renderer, messages []Message, on TrainOn) ([]Example, error) {
	on, err := on.normalize()
	if err != nil {
		return nil, err
	}
	if r.HasExtensionProperty() {
		ex, err := r.Supervised(messages, on)
		if err != nil {
			return nil, err
		}
		return []Example{ex}, nil
	}
	first := 0
	switch on {
	case LastAssistantMessage:
		first = len(messages) - 1
	case LastAssistantTurn:
		first = lastRole(messages, RoleUser) + 1
	case AllAssistantMessages:
	default:
		return nil, fmt.Errorf("%w: %s lacks the extension property, and %s weights messages that are not "+
			"turns the model produces, so there is no prompt to end each example at", ErrUnsupported, r.Name(), on)
	}
	var out []Example
	for i := max(first, 0); i < len(messages); i++ {
		if messages[i].Role != RoleAssistant {
			continue
		}
		ex, err := r.Supervised(messages[:i+1], LastAssistantMessage)
		if err != nil {
			return nil, fmt.Errorf("example ending at message %d: %w", i, err)
		}
		out = append(out, ex)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no assistant message for %s", ErrNothingToTrain, on)
	}
	return out, nil
}

// ids resolves control tokens by their text, for constructors.
type ids struct {
	tok     Tokenizer
	name    string
	missing []string
}

func (x *ids) must(token string) int {
	id, ok := x.tok.TokenID(token)
	if !ok {
		x.missing = append(x.missing, token)
	}
	return id
}

func (x *ids) optional(token string) (int, bool) {
	if token == "" {
		return 0, false
	}
	return x.tok.TokenID(token)
}

func (x *ids) err() error {
	if len(x.missing) == 0 {
		return nil
	}
	return fmt.Errorf("chat: %s: the tokenizer has no token %q (is it a %s tokenizer?)", x.name, x.missing[0], x.name)
}
