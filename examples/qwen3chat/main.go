// Command qwen3chat builds a Qwen3 chat prompt, tokenizes it with Qwen3's
// own tokenizer.json, and parses a completion back into a message — the
// three things an RL loop does with a chat model's text.
//
//	.ci/hf-oracle                       # installs the Qwen3 tokenizer files (once)
//	go run ./examples/qwen3chat         # or -tokenizer DIR for your own Qwen3 folder
//
// With a real sampler, the completion ids come from it (kept verbatim as
// the action tokens); here a sampled completion is played by encoding a
// string.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/tokenizer"
)

func main() {
	dir := flag.String("tokenizer", defaultDir(), "a Qwen3 model folder (tokenizer.json, tokenizer_config.json)")
	flag.Parse()
	if err := run(os.Stdout, *dir); err != nil {
		log.Fatal(err)
	}
}

// defaultDir is where .ci/hf-oracle puts the Qwen3 files.
func defaultDir() string {
	root := os.Getenv("TANDEM_HF_DIR")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".cache", "tandem", "hf")
	}
	return filepath.Join(root, "models", "qwen3")
}

func run(w io.Writer, dir string) error {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return fmt.Errorf("%w (run .ci/hf-oracle, or pass -tokenizer with a Qwen3 folder)", err)
	}
	r, err := chat.New("qwen3", tok, tok.Config())
	if err != nil {
		return err
	}
	conv := []chat.Message{
		{Role: chat.RoleSystem, Content: "You are a careful calculator."},
		{Role: chat.RoleUser, Content: "What is 17 + 25?"},
	}
	prompt, err := r.GenerationPrompt(conv, "")
	if err != nil {
		return err
	}
	text, err := tok.Decode(prompt, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "prompt: %d tokens\n%s\n", len(prompt), text)
	fmt.Fprintf(w, "stop tokens: %v\n", r.StopTokens())

	// What a sampler would return: reasoning, the answer, the stop token.
	completion := tok.Encode("<think>\n17 + 25: 7 + 5 = 12, carry 1; 1 + 2 + 1 = 4.\n</think>\n\n42<|im_end|>", tokenizer.EncodeOptions{})
	msg, term, err := r.Parse(completion)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "completion: %d tokens, ended by %s\n", len(completion), term)
	fmt.Fprintf(w, "reasoning: %q\ncontent: %q\n", msg.Reasoning, msg.Content)
	return nil
}
