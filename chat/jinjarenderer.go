package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tandemrl/tandem/tokenizer"
)

// JinjaOptions configure the Jinja renderer.
type JinjaOptions struct {
	// Kwargs are extra template variables (enable_thinking, ...); see
	// TemplateOptions.Kwargs.
	Kwargs map[string]any
	// Now is strftime_now's clock; nil means time.Now.
	Now func() time.Time
}

// NewJinja is a Renderer for any model, from the chat template in cfg.
//
// GenerationPrompt is apply_chat_template(add_generation_prompt=True,
// tokenize=True) plus the prefill. The end of a turn is cfg.EOSToken (for
// chat models' configs the end-of-turn token: <|im_end|>, <|eot_id|>,
// <end_of_turn>), its only stop token. Supervised finds each trained
// assistant message in the render of the whole conversation: it starts
// where the generation prompt of the messages before it ends (which must be
// a prefix of the whole render) and ends after the next end-of-turn token;
// the pieces are encoded one by one, like a family renderer's. Only
// assistant messages can be weighted (AllMessages and
// AllUserAndSystemMessages are not supported). Parse splits off a
// <think> block and <tool_call> blocks when the template writes them.
// The extension property is not claimed.
func NewJinja(tok Tokenizer, cfg tokenizer.Config, opts JinjaOptions) (Renderer, error) {
	t, err := NewTemplate(cfg)
	if err != nil {
		return nil, err
	}
	j := &jinjaRenderer{tok: tok, tmpl: t, cfg: cfg, opts: opts,
		thinks: strings.Contains(cfg.ChatTemplate, thinkClose),
		tools:  strings.Contains(cfg.ChatTemplate, toolCallOpen)}
	if id, ok := tok.TokenID(cfg.EOSToken); ok && cfg.EOSToken != "" {
		j.stops = []int{id}
	}
	return j, nil
}

type jinjaRenderer struct {
	tok           Tokenizer
	tmpl          *Template
	cfg           tokenizer.Config
	opts          JinjaOptions
	stops         []int
	thinks, tools bool
}

func (j *jinjaRenderer) Name() string               { return "jinja" }
func (j *jinjaRenderer) StopTokens() []int          { return append([]int(nil), j.stops...) }
func (j *jinjaRenderer) StopStrings() []string      { return nil }
func (j *jinjaRenderer) HasExtensionProperty() bool { return false }

func (j *jinjaRenderer) render(msgs []Message, gen bool) (string, error) {
	raw, err := MessagesJSON(msgs...)
	if err != nil {
		return "", err
	}
	return j.tmpl.Render(raw, TemplateOptions{AddGenerationPrompt: gen, Kwargs: j.opts.Kwargs, Now: j.opts.Now})
}

func (j *jinjaRenderer) enc(s string) []int { return j.tok.Encode(s, tokenizer.EncodeOptions{}) }

func (j *jinjaRenderer) GenerationPrompt(messages []Message, prefill string) ([]int, error) {
	if len(messages) == 0 {
		return nil, fmt.Errorf("%w: jinja needs at least one message to prompt from", ErrEmptyConversation)
	}
	text, err := j.render(messages, true)
	if err != nil {
		return nil, err
	}
	ids := j.enc(text)
	if prefill != "" {
		ids = append(ids, j.enc(prefill)...)
	}
	return ids, nil
}

func (j *jinjaRenderer) Supervised(messages []Message, on TrainOn) (Example, error) {
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
	if on == AllMessages || on == AllUserAndSystemMessages {
		return Example{}, fmt.Errorf("%w: jinja weights only assistant messages (or all tokens), not %s", ErrUnsupported, on)
	}
	full, err := j.render(messages, false)
	if err != nil {
		return Example{}, err
	}
	var ex Example
	add := func(s string, w float32) {
		for _, id := range j.enc(s) {
			ex.Tokens = append(ex.Tokens, id)
			ex.Weights = append(ex.Weights, w)
		}
	}
	if on == AllTokens {
		rest := full
		if j.cfg.BOSToken != "" && strings.HasPrefix(full, j.cfg.BOSToken) {
			add(j.cfg.BOSToken, 0)
			rest = full[len(j.cfg.BOSToken):]
		}
		add(rest, 1)
		return ex, nil
	}
	turnStart := lastRole(messages[:n-1], RoleUser) + 1
	pos, weighted := 0, false
	for i, m := range messages {
		if m.Role != RoleAssistant || !trained(on, m, i == n-1, i >= turnStart) {
			if on == Customized && m.Trainable != nil && *m.Trainable {
				return Example{}, fmt.Errorf("%w: jinja weights only assistant messages; message %d is %s", ErrUnsupported, i, m.Role)
			}
			continue
		}
		start, end, err := j.span(messages, i, full)
		if err != nil {
			return Example{}, err
		}
		if start < pos {
			return Example{}, fmt.Errorf("chat: jinja: message %d starts inside the previous trained message", i)
		}
		add(full[pos:start], 0)
		add(full[start:end], 1)
		pos, weighted = end, true
	}
	add(full[pos:], 0)
	if !weighted {
		return Example{}, fmt.Errorf("%w: %s selects no message of this conversation (last role %q)",
			ErrNothingToTrain, on, messages[n-1].Role)
	}
	return ex, nil
}

// span is where message i's trained text lies in full.
func (j *jinjaRenderer) span(messages []Message, i int, full string) (int, int, error) {
	var prompt string
	if i > 0 {
		var err error
		if prompt, err = j.render(messages[:i], true); err != nil {
			return 0, 0, fmt.Errorf("chat: jinja: the generation prompt before message %d: %w", i, err)
		}
	}
	if !strings.HasPrefix(full, prompt) {
		return 0, 0, fmt.Errorf("%w: jinja: the template renders the conversation before message %d differently "+
			"once the conversation goes on (it rewrites history), so the message has no prompt to train after",
			ErrUnsupported, i)
	}
	start, end := len(prompt), len(full)
	if eot := j.cfg.EOSToken; eot != "" {
		if k := strings.Index(full[start:], eot); k >= 0 {
			end = start + k + len(eot)
		} else if i != len(messages)-1 {
			return 0, 0, fmt.Errorf("chat: jinja: no %s ends message %d", eot, i)
		}
	}
	return start, end, nil
}

func (j *jinjaRenderer) Parse(completion []int) (Message, Termination, error) {
	if len(j.stops) == 0 {
		return Message{}, Malformed, errors.New("chat: jinja: the tokenizer config names no EOS token to end a turn")
	}
	text, term, err := decodeCompletion(j.tok, "jinja", completion, stopSet{endOfTurn: j.stops[0]})
	if err != nil {
		return Message{}, term, err
	}
	m := Message{Role: RoleAssistant, Content: text}
	if j.thinks {
		m.Reasoning, m.Content = splitThink(m.Content)
	}
	if j.tools {
		m.Content, m.ToolCalls, m.UnparsedToolCalls = splitToolCalls(m.Content)
	}
	return m, term, nil
}
