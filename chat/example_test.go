package chat_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/tokenizer"
)

// A Qwen3 prompt, and a sampled completion read back. With the real files,
// tok comes from tokenizer.Load(dir) and cfg from tok.Config().
func ExampleNew() {
	tok := newFakeTokenizer()
	r, err := chat.New("qwen3", tok, tokenizer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	prompt, err := r.GenerationPrompt([]chat.Message{
		{Role: chat.RoleSystem, Content: "Be brief."},
		{Role: chat.RoleUser, Content: "2+2?"},
	}, "")
	if err != nil {
		log.Fatal(err)
	}
	text, _ := tok.Decode(prompt, false)
	fmt.Printf("%q\n", text)

	completion := tok.Encode("<think>\nEasy.\n</think>\n\n4<|im_end|>", tokenizer.EncodeOptions{})
	msg, term, err := r.Parse(completion)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s reasoning=%q content=%q\n", term, msg.Reasoning, msg.Content)
	// Output:
	// "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
	// stop_sequence reasoning="Easy." content="4"
}

// A supervised example trains the assistant's text and its end-of-turn
// token, nothing else.
func ExampleRenderer_Supervised() {
	tok := newFakeTokenizer()
	r, err := chat.New("llama3", tok, tokenizer.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ex, err := r.Supervised([]chat.Message{
		{Role: chat.RoleUser, Content: "Hi"},
		{Role: chat.RoleAssistant, Content: "Hello"},
	}, chat.LastAssistantMessage)
	if err != nil {
		log.Fatal(err)
	}
	var trained []int
	for i, w := range ex.Weights {
		if w == 1 {
			trained = append(trained, ex.Tokens[i])
		}
	}
	text, _ := tok.Decode(trained, false)
	fmt.Printf("trained %q of %d tokens\n", text, len(ex.Tokens))
	// Output: trained "Hello<|eot_id|>" of 31 tokens
}

// ApplyTemplate renders a chat template as transformers does; message
// fields and key order are passed through as given.
func ExampleApplyTemplate() {
	cfg := tokenizer.Config{
		BOSToken:     "<s>",
		ChatTemplate: `{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% if m.meta %} {{ m.meta | tojson }}{% endif %}{{ '\n' }}{% endfor %}`,
	}
	msgs := json.RawMessage(`[{"role": "user", "content": "hi", "meta": {"z": 1, "a": 2.0}}]`)
	text, err := chat.ApplyTemplate(cfg, msgs, chat.TemplateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(text)
	// Output: <s>[user] hi {"z": 1, "a": 2.0}
}
