package chat_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/internal/hforacle"
	"github.com/tandemrl/tandem/tokenizer"
)

// familyModel pairs a family renderer with the model files it is checked
// against.
type familyModel struct {
	renderer, model string
	reasoning       bool   // renders Message.Reasoning
	toolCalls       bool   // renders tool calls
	endOfTurn       string // the template's end-of-turn text
	hfKwargs        map[string]any
}

var familyModels = []familyModel{
	{renderer: "qwen3", model: "qwen3", reasoning: true, toolCalls: true, endOfTurn: "<|im_end|>"},
	{renderer: "qwen3_disable_thinking", model: "qwen3", reasoning: true, toolCalls: true, endOfTurn: "<|im_end|>",
		hfKwargs: map[string]any{"enable_thinking": false}},
	{renderer: "llama3", model: "llama3_1", endOfTurn: "<|eot_id|>"},
	{renderer: "deepseek_v3", model: "deepseek_v3", toolCalls: true, endOfTurn: "<｜end▁of▁sentence｜>"},
	{renderer: "gemma3", model: "gemma3", endOfTurn: "<end_of_turn>"},
}

// familyDiffers are the conversations where a family renderer is expected
// to give other ids than Hugging Face's template, and why (doc.go). The
// test checks that they do differ, so the list stays true.
var familyDiffers = map[string]string{
	"qwen3/special_token_text":                      "message text is encoded with special tokens split",
	"qwen3/leading_newline":                         "header and content are encoded apart",
	"qwen3/tools_string_arguments":                  "the template fails on content null",
	"qwen3_disable_thinking/special_token_text":     "message text is encoded with special tokens split",
	"qwen3_disable_thinking/leading_newline":        "header and content are encoded apart",
	"qwen3_disable_thinking/tools_string_arguments": "the template fails on content null",
	"qwen3_disable_thinking/final_reasoning":        "a turn that reasoned after a prompt closing the think block is refused",
	"llama3/system_whitespace":                      "the template trims content",
	"llama3/leading_newline":                        "the template trims content",
	"deepseek_v3/tools":                             "the template drops tool calls whose message has content",
	"deepseek_v3/tools_text_and_answer":             "the template drops tool calls whose message has content",
	"deepseek_v3/tools_string_arguments":            "the template leaves a single call unclosed",
	"gemma3/system_whitespace":                      "the template trims content",
	"gemma3/leading_newline":                        "the template trims content",
}

// TestFamilyPromptsMatchHF compares each family renderer's ids with
// Hugging Face's: the Jinja2 render of the model's template (transformers'
// setup), encoded by Hugging Face's tokenizer without special tokens. With
// add_generation_prompt the generation prompt is compared; without, the
// supervised example of the final assistant message (the template's
// trailing "\n" after the final end-of-turn token dropped: that "\n" opens
// the next header).
func TestFamilyPromptsMatchHF(t *testing.T) {
	j := newJinja2(t)
	for _, fm := range familyModels {
		t.Run(fm.renderer, func(t *testing.T) {
			t.Parallel()
			ref := newHFTokenizer(t, fm.model) // Hugging Face's ids of Jinja2's render
			for _, impl := range tokenizersFor(t, fm.model) {
				r, err := chat.New(fm.renderer, impl.tok, impl.cfg)
				if err != nil {
					t.Fatal(err)
				}
				agree, total := 0, 0
				for _, c := range chatCases {
					if c.cont {
						continue
					}
					msgs := c.msgs(t)
					if !fm.toolCalls && hasToolCalls(msgs) {
						continue // not rendered by this family
					}
					total++
					ours, ourErr := familyIDs(t, fm, r, c, msgs)
					hf, hfErr := hfIDs(t, j, ref, fm, c)
					why, differs := familyDiffers[fm.renderer+"/"+c.name]
					match := (ourErr != nil && hfErr != nil) || (ourErr == nil && hfErr == nil && slices.Equal(ours, hf))
					switch {
					case match && differs:
						t.Errorf("%s (%s tokenizer): expected to differ (%s) but matches", c.name, impl.name, why)
					case match:
						agree++
					case differs:
					default:
						t.Errorf("%s (%s tokenizer): ids differ\n  ours (err %v): %v\n  hf   (err %v): %v\n  ours: %q\n  hf:   %q",
							c.name, impl.name, ourErr, ours, hfErr, hf, decodeAll(ref, ours), decodeAll(ref, hf))
					}
				}
				t.Logf("%s on the %s tokenizer: %d/%d conversations give Hugging Face's ids; the others differ as documented",
					fm.renderer, impl.name, agree, total)
			}
		})
	}
}

func hasToolCalls(msgs []chat.Message) bool {
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 || m.Role == chat.RoleTool {
			return true
		}
	}
	return false
}

// familyIDs is what the renderer gives for the case.
func familyIDs(t *testing.T, fm familyModel, r chat.Renderer, c chatCase, msgs []chat.Message) ([]int, error) {
	t.Helper()
	if !fm.reasoning {
		for i := range msgs {
			msgs[i].Reasoning = "" // the template ignores reasoning_content
		}
	}
	if c.tools != "" && strings.HasPrefix(fm.renderer, "qwen3") {
		var tools []json.RawMessage
		if err := json.Unmarshal([]byte(c.tools), &tools); err != nil {
			t.Fatal(err)
		}
		system := ""
		if msgs[0].Role == chat.RoleSystem {
			system, msgs = msgs[0].Content, msgs[1:]
		}
		sys, err := chat.Qwen3ToolSystem(system, tools...)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append([]chat.Message{sys}, msgs...)
	}
	if c.gen {
		return r.GenerationPrompt(msgs, "")
	}
	ex, err := r.Supervised(msgs, chat.LastAssistantMessage)
	return ex.Tokens, err
}

// hfIDs is Hugging Face's ids for the case.
func hfIDs(t *testing.T, j *jinja2, tok chat.Tokenizer, fm familyModel, c chatCase) ([]int, error) {
	t.Helper()
	req := c.request()
	req.Config = filepath.Join(hforacle.Model(t, fm.model), "tokenizer_config.json")
	req.Kwargs = fm.hfKwargs
	out := pyRender(t, j, req)
	if out.errored {
		return nil, fmt.Errorf("%s", out.err)
	}
	text := out.text
	if !c.gen {
		text = strings.TrimSuffix(text, "\n")
		if !strings.HasSuffix(text, fm.endOfTurn) {
			t.Fatalf("%s: the render does not end in %s: %q", c.name, fm.endOfTurn, text)
		}
	}
	return tok.Encode(text, tokenizer.EncodeOptions{}), nil
}

func decodeAll(tok chat.Tokenizer, ids []int) string {
	if len(ids) == 0 {
		return ""
	}
	s, err := tok.Decode(ids, false)
	if err != nil {
		return err.Error()
	}
	return s
}
