package basemodel

import (
	_ "embed"
	"fmt"

	"github.com/tandemrl/tandem/tokenizer"
)

// The engine's character vocabulary (engine.Tokenizer) as a Hugging Face
// tokenizer.json: a WordLevel model over BOS (<bos>, 0), EOS (<eos>, 1),
// newline and printable ASCII, each character its own word, BOS added by
// the post-processor. Hugging Face's tokenizers loads it and gives the
// engine's ids; so does package tokenizer (tested). A character outside
// the vocabulary, which engine.Tokenizer refuses, encodes as the file's
// unk token, <eos>.
//
//go:embed tokenizer.json
var tokenizerJSON []byte

//go:embed tokenizer_config.json
var tokenizerConfigJSON []byte

// TokenizerFiles returns the shipped tokenizer.json and
// tokenizer_config.json, as a Hugging Face model folder holds them. The
// caller must not modify them.
func TokenizerFiles() (tokenizer, config []byte) {
	return tokenizerJSON, tokenizerConfigJSON
}

// Tokenizer returns the shipped model's tokenizer, loaded from its
// tokenizer.json by package tokenizer.
func Tokenizer() (*tokenizer.Tokenizer, error) {
	t, err := tokenizer.Parse(tokenizerJSON, tokenizerConfigJSON)
	if err != nil {
		return nil, fmt.Errorf("basemodel: shipped tokenizer: %w", err)
	}
	return t, nil
}
