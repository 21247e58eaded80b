package hf

import "errors"

func errorsAs[E error](err error, target *E) bool { return errors.As(err, target) }
