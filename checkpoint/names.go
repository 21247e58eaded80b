package checkpoint

import (
	"fmt"

	"github.com/tandemrl/tandem/policy"
)

// ValidName reports whether name can name a checkpoint. The rule is
// [policy.ValidRunName]'s: 1–128 characters from letters, digits, '-', '_'
// and '.', not starting with '.'; so "..", "a/b" and "" are refused.
func ValidName(name string) error {
	if err := policy.ValidRunName(name); err != nil {
		return fmt.Errorf("%w: checkpoint name %q: want 1–128 letters, digits, '-', '_' or '.', not starting with '.'", ErrBadName, name)
	}
	return nil
}

// ValidRun reports whether run can name a run in a store
// ([policy.ValidRunName]), wrapping ErrBadName.
func ValidRun(run string) error {
	if err := policy.ValidRunName(run); err != nil {
		return fmt.Errorf("%w: %v", ErrBadName, err)
	}
	return nil
}

// ValidKind reports whether kind is policy.SamplerWeights or policy.State.
func ValidKind(kind policy.Kind) error {
	switch kind {
	case policy.SamplerWeights, policy.State:
		return nil
	}
	return fmt.Errorf("%w: kind %q: want %q or %q", ErrBadName, kind, policy.SamplerWeights, policy.State)
}

// validID checks a run, kind and name together.
func validID(run string, kind policy.Kind, name string) error {
	if err := ValidRun(run); err != nil {
		return err
	}
	if err := ValidKind(kind); err != nil {
		return err
	}
	return ValidName(name)
}
