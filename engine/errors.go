package engine

import "errors"

// Sentinel errors, matched with errors.Is; the messages wrapping them say
// which field or value was wrong and what was expected.
var (
	// ErrShape: a tensor's name, shape or dtype disagrees with the model.
	ErrShape = errors.New("engine: tensor does not match the model")
	// ErrInput: a training example or prompt is malformed (out-of-vocabulary
	// token, too long, inputs of the wrong length, NaN/Inf values).
	ErrInput = errors.New("engine: bad input")
	// ErrLoss: an unknown loss or a bad loss configuration.
	ErrLoss = errors.New("engine: bad loss")
)
