package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ardanlabs/jinja"

	"github.com/tandemrl/tandem/tokenizer"
)

// ErrNoTemplate: the tokenizer config has no chat template.
var ErrNoTemplate = errors.New("chat: the tokenizer config has no chat_template")

// TemplateError is raised by a template's raise_exception(message), as
// jinja2's TemplateError is in transformers (Gemma 3's "Conversation roles
// must alternate user/assistant/user/assistant/...").
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string { return "chat: template raised: " + e.Message }

// TemplateOptions are apply_chat_template's arguments other than the
// messages.
type TemplateOptions struct {
	// AddGenerationPrompt ends the render in the assistant header.
	AddGenerationPrompt bool
	// ContinueFinalMessage cuts the render right after the final message's
	// content, so the model continues it (transformers'
	// continue_final_message). It excludes AddGenerationPrompt.
	ContinueFinalMessage bool
	// Tools is a JSON array of tool schemas (the template's `tools`), or
	// empty for None.
	Tools json.RawMessage
	// Documents is a JSON array for `documents`, or empty for None.
	Documents json.RawMessage
	// Kwargs are further template variables (enable_thinking,
	// date_string, ...). A json.RawMessage value is read as JSON with its
	// key order kept; other values go through encoding/json first (Go
	// maps then come in sorted key order). They override the
	// special-token variables, as in transformers.
	Kwargs map[string]any
	// Now is strftime_now's clock; nil means time.Now.
	Now func() time.Time
}

// Template is a chat template compiled the way transformers compiles one
// (utils/chat_template_utils.py): trim_blocks and lstrip_blocks, loop
// controls, raise_exception, strftime_now, and tojson as
// json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False) with key order kept. The variables are messages, tools,
// documents, add_generation_prompt, bos_token / eos_token / pad_token /
// unk_token (those the config names) and the Kwargs.
//
// github.com/ardanlabs/jinja v1.8.0 has its own tojson, which sends
// indent=N through encoding/json (sorted keys, HTML escaping) and prints
// floats as Go does, and its trim turns None into "" and trims Go's
// whitespace; the template source is rewritten so every `| tojson` and
// `| trim` calls this package's Python-exact version instead. Two
// differences remain, both on input transformers rejects or mangles: the
// engine prints None as "" (Jinja2: "None"), and `x in None` is false
// (Python: TypeError), as with "content": null in Qwen3's template.
//
// A Template is safe for concurrent use.
type Template struct {
	tmpl    *jinja.Template
	special map[string]string
}

// The names the overridden filters are rewritten to.
const (
	tojsonName = "tandem_tojson"
	trimName   = "tandem_trim"
)

// NewTemplate compiles cfg.ChatTemplate.
func NewTemplate(cfg tokenizer.Config) (*Template, error) {
	if cfg.ChatTemplate == "" {
		return nil, ErrNoTemplate
	}
	tmpl, err := jinja.Compile(rewriteFilters(cfg.ChatTemplate))
	if err != nil {
		return nil, fmt.Errorf("chat: compile chat template: %w", err)
	}
	special := map[string]string{}
	for k, v := range map[string]string{"bos_token": cfg.BOSToken, "eos_token": cfg.EOSToken,
		"pad_token": cfg.PadToken, "unk_token": cfg.UnkToken} {
		if v != "" {
			special[k] = v
		}
	}
	return &Template{tmpl: tmpl, special: special}, nil
}

// Render renders messages (a JSON array of message objects, passed to the
// template with every field and key order as given).
func (t *Template) Render(messages json.RawMessage, opts TemplateOptions) (string, error) {
	msgs, err := jsonValue(messages)
	if err != nil {
		return "", fmt.Errorf("chat: messages: %w", err)
	}
	if !msgs.IsList() {
		return "", errors.New("chat: messages must be a JSON array of message objects")
	}
	if opts.ContinueFinalMessage && opts.AddGenerationPrompt {
		return "", errors.New("chat: continue_final_message and add_generation_prompt exclude each other: " +
			"the first continues the final message, the second starts a new one")
	}
	vars := make(map[string]jinja.Value, len(t.special)+len(opts.Kwargs)+8)
	for k, v := range t.special {
		vars[k] = jinja.NewString(v)
	}
	for k, v := range opts.Kwargs {
		switch k {
		case "messages", "tools", "documents", "add_generation_prompt":
			return "", fmt.Errorf("chat: template variable %q is an apply_chat_template argument, not a kwarg", k)
		}
		val, err := kwargValue(v)
		if err != nil {
			return "", fmt.Errorf("chat: kwarg %q: %w", k, err)
		}
		vars[k] = val
	}
	vars["messages"] = msgs
	if vars["tools"], err = optionalJSON(opts.Tools); err != nil {
		return "", fmt.Errorf("chat: tools: %w", err)
	}
	if vars["documents"], err = optionalJSON(opts.Documents); err != nil {
		return "", fmt.Errorf("chat: documents: %w", err)
	}
	vars["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	vars["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now(format) takes one string")
		}
		return jinja.NewString(strftime(now(), args[0].AsString())), nil
	})
	vars["raise_exception"] = jinja.NewCallable("raise_exception", raiseException)
	vars[tojsonName] = jinja.NewCallable("tojson", filterToJSON)
	vars[trimName] = jinja.NewCallable("trim", filterTrim)

	text, err := t.tmpl.RenderValues(vars)
	if err != nil {
		var te *TemplateError
		if errors.As(err, &te) {
			return "", te
		}
		return "", fmt.Errorf("chat: render chat template: %w", err)
	}
	if opts.ContinueFinalMessage {
		return continueFinal(text, msgs)
	}
	return text, nil
}

// Encode renders messages and encodes the text without special tokens, as
// apply_chat_template(tokenize=True) does.
func (t *Template) Encode(tok Tokenizer, messages json.RawMessage, opts TemplateOptions) ([]int, error) {
	text, err := t.Render(messages, opts)
	if err != nil {
		return nil, err
	}
	return tok.Encode(text, tokenizer.EncodeOptions{}), nil
}

// ApplyTemplate is transformers' apply_chat_template(messages,
// tokenize=False) with cfg's chat template. It compiles the template each
// call; keep a Template to render many.
func ApplyTemplate(cfg tokenizer.Config, messages json.RawMessage, opts TemplateOptions) (string, error) {
	t, err := NewTemplate(cfg)
	if err != nil {
		return "", err
	}
	return t.Render(messages, opts)
}

// ApplyTemplateIDs is apply_chat_template(messages, tokenize=True).
func ApplyTemplateIDs(tok Tokenizer, cfg tokenizer.Config, messages json.RawMessage, opts TemplateOptions) ([]int, error) {
	t, err := NewTemplate(cfg)
	if err != nil {
		return nil, err
	}
	return t.Encode(tok, messages, opts)
}

// MessagesJSON is msgs as the JSON array a Template renders.
func MessagesJSON(msgs ...Message) (json.RawMessage, error) {
	if msgs == nil {
		msgs = []Message{}
	}
	return marshalNoEscape(msgs)
}

func optionalJSON(raw json.RawMessage) (jinja.Value, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return jinja.None(), nil
	}
	return jsonValue(raw)
}

func kwargValue(v any) (jinja.Value, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = marshalNoEscape(v); err != nil {
			return jinja.Undefined(), err
		}
	}
	return jsonValue(raw)
}

func raiseException(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), &TemplateError{Message: "raise_exception() called without a message"}
	}
	msg := args[0].String()
	if args[0].IsString() {
		msg = args[0].AsString()
	}
	return jinja.Undefined(), &TemplateError{Message: msg}
}

// filterToJSON is transformers' tojson(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False), which calls json.dumps with those.
func filterToJSON(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	params := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	got := map[string]jinja.Value{}
	for i, a := range args[1:] {
		if i >= len(params) {
			return jinja.Undefined(), errors.New("tojson: too many arguments")
		}
		got[params[i]] = a
	}
	for k, v := range kwargs {
		if !slices.Contains(params, k) {
			return jinja.Undefined(), fmt.Errorf("tojson: unexpected keyword argument %q", k)
		}
		got[k] = v
	}
	set := func(k string) (jinja.Value, bool) {
		v, ok := got[k]
		return v, ok && !v.IsNone() && !v.IsUndefined()
	}
	var o dumpOptions
	if v, ok := set("ensure_ascii"); ok {
		o.ensureASCII = v.IsTruthy()
	}
	if v, ok := set("sort_keys"); ok {
		o.sortKeys = v.IsTruthy()
	}
	if v, ok := set("indent"); ok {
		var s string
		switch {
		case v.IsString():
			s = v.AsString()
		case v.IsInt():
			s = strings.Repeat(" ", int(max(v.AsInt(), 0)))
		default:
			return jinja.Undefined(), errors.New("tojson: indent must be an int or a string")
		}
		o.indent = &s
	}
	o.itemSep, o.keySep = ", ", ": "
	if o.indent != nil {
		o.itemSep = ","
	}
	if v, ok := set("separators"); ok {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be two strings")
		}
		o.itemSep, o.keySep = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	s, err := dumps(args[0], o)
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(s), nil
}

// continueFinal cuts text after the final message's content, as
// transformers does for continue_final_message: at its last occurrence, or
// that of its whitespace-stripped form (templates that trim).
func continueFinal(text string, msgs jinja.Value) (string, error) {
	list := msgs.AsList()
	if list.Len() == 0 {
		return "", errors.New("chat: continue_final_message needs a final message")
	}
	final := ""
	if m := list.Get(list.Len() - 1); m.IsDict() {
		if c, ok := m.AsDict().Get("content"); ok {
			switch {
			case c.IsString():
				final = c.AsString()
			case c.IsList() && c.AsList().Len() > 0:
				if p := c.AsList().Get(c.AsList().Len() - 1); p.IsDict() {
					if t, ok := p.AsDict().Get("text"); ok && t.IsString() {
						final = t.AsString()
					}
				}
			}
		}
	}
	for _, f := range []string{final, strings.TrimSpace(final)} {
		if i := strings.LastIndex(text, f); i >= 0 {
			return text[:i+len(f)], nil
		}
	}
	return "", errors.New("chat: continue_final_message: the final message's content is not in the render")
}

// filterTrim is Jinja2's trim(value, chars=None): str(value).strip(chars).
func filterTrim(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("trim: no value")
	}
	chars, ok := kwargs["chars"]
	if len(args) > 1 {
		chars, ok = args[1], true
	}
	s := pythonStr(args[0])
	if ok && !chars.IsNone() && !chars.IsUndefined() {
		return jinja.NewString(strings.Trim(s, pythonStr(chars))), nil
	}
	return jinja.NewString(strings.TrimFunc(s, isPythonSpace)), nil
}

// pythonStr is Python's str(v) for the values templates trim.
func pythonStr(v jinja.Value) string {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsNone():
		return "None"
	case v.IsUndefined():
		return ""
	case v.IsBool():
		if v.AsBool() {
			return "True"
		}
		return "False"
	case v.IsInt():
		return strconv.FormatInt(v.AsInt(), 10)
	case v.IsFloat():
		return pythonFloat(v.AsFloat())
	}
	return v.String()
}

// isPythonSpace is Python's str.isspace for one character (which, unlike
// unicode.IsSpace, includes U+001C..U+001F).
func isPythonSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}
