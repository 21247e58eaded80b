package hf

import (
	"errors"
	"fmt"
)

// Sentinels wrapped by every error of their kind, for errors.Is.
var (
	// ErrConfig: config.json, generation_config.json or the shard index is
	// malformed, contradictory or asks for something the engine lacks.
	ErrConfig = errors.New("hf: unsupported or invalid config")
	// ErrWeights: a weight file is missing, malformed, or its tensors do
	// not match the config.
	ErrWeights = errors.New("hf: bad weights")
)

// ConfigError is a bad or unsupported value in a JSON file of the model
// folder: the file, the field (dotted for nested objects, "" when the
// whole file is wrong), its value as JSON ("" when absent) and what is
// accepted. It wraps [ErrConfig].
type ConfigError struct {
	File  string
	Field string
	Value string
	Msg   string
}

func (e *ConfigError) Error() string {
	switch {
	case e.Field == "":
		return fmt.Sprintf("hf: %s: %s", e.File, e.Msg)
	case e.Value == "":
		return fmt.Sprintf("hf: %s: field %q: %s", e.File, e.Field, e.Msg)
	}
	return fmt.Sprintf("hf: %s: field %q = %s: %s", e.File, e.Field, e.Value, e.Msg)
}

func (e *ConfigError) Unwrap() error { return ErrConfig }

// WeightError is a problem with the weights: the file and tensor concerned
// ("" when the problem is the file as a whole) and what was wrong. It wraps
// [ErrWeights] and, when there is one, the underlying error.
type WeightError struct {
	File   string
	Tensor string
	Msg    string
	Err    error
}

func (e *WeightError) Error() string {
	s := "hf: " + e.File
	if e.Tensor != "" {
		s += fmt.Sprintf(": tensor %q", e.Tensor)
	}
	s += ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *WeightError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrWeights, e.Err}
	}
	return []error{ErrWeights}
}
