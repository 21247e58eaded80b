package chat

import (
	"fmt"
	"strings"

	"github.com/tandemrl/tandem/tokenizer"
)

// names are the renderers New knows, in the order Names lists them.
var names = []string{"qwen3", "qwen3_disable_thinking", "qwen3_preserve_thinking", "llama3",
	"deepseek_v3", "gemma3", "role_colon", "jinja"}

// DefaultName is the renderer to use for a model folder when none is
// named: "jinja" (its own chat template) when cfg has one, else
// "role_colon".
func DefaultName(cfg tokenizer.Config) string {
	if cfg.ChatTemplate != "" {
		return "jinja"
	}
	return "role_colon"
}

// Names lists the renderer names New accepts.
func Names() []string { return append([]string(nil), names...) }

// New returns the renderer called name (tinker-cookbook's names where it
// has the renderer; "deepseekv3" is an alias of "deepseek_v3"). "jinja" is
// the renderer from cfg's chat template (NewJinja); the family renderers
// read only cfg's BOS and EOS token text (role_colon).
func New(name string, tok Tokenizer, cfg tokenizer.Config) (Renderer, error) {
	switch name {
	case "qwen3":
		return NewQwen3(tok, Qwen3Options{})
	case "qwen3_disable_thinking":
		return NewQwen3(tok, Qwen3Options{DisableThinking: true})
	case "qwen3_preserve_thinking":
		return NewQwen3(tok, Qwen3Options{PreserveThinking: true})
	case "llama3":
		return NewLlama3(tok)
	case "deepseek_v3", "deepseekv3":
		return NewDeepSeekV3(tok)
	case "gemma3":
		return NewGemma3(tok)
	case "role_colon":
		return NewRoleColon(tok, cfg)
	case "jinja":
		return NewJinja(tok, cfg, JinjaOptions{})
	}
	return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownRenderer, name, strings.Join(names, ", "))
}
