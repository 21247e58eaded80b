package tokenizer

import (
	"errors"
	"fmt"
)

// ErrUnsupported is matched (errors.Is) by a LoadError about a component
// type or flag this package does not implement, such as a Unigram model or
// a BPE dropout.
var ErrUnsupported = errors.New("tokenizer: unsupported")

// LoadError reports a tokenizer.json or tokenizer_config.json that cannot
// be used: malformed JSON, a missing or mistyped field, an unknown
// component type or an unsupported flag. Path is the JSON path of the
// offending value ("pre_tokenizer.pretokenizers[1]"), empty for the file
// as a whole.
type LoadError struct {
	File string // "tokenizer.json" or "tokenizer_config.json"
	Path string
	Msg  string
	// Unsupported is set when the file is valid but asks for a component
	// or flag this package does not implement.
	Unsupported bool
}

func (e *LoadError) Error() string {
	if e.Path == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Path + ": " + e.Msg
}

// Is makes errors.Is(err, ErrUnsupported) true for unsupported components.
func (e *LoadError) Is(target error) bool {
	return target == ErrUnsupported && e.Unsupported
}

// IDError reports a token id that names no token in Decode or in a
// StreamDecoder.
type IDError struct {
	ID        int
	VocabSize int // the tokenizer's VocabSize
}

func (e *IDError) Error() string {
	return fmt.Sprintf("tokenizer: id %d is not a token of this vocabulary (size %d)", e.ID, e.VocabSize)
}
