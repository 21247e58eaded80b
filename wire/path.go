package wire

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tandemrl/tandem/policy"
)

// ErrBadPath reports a tinker:// path that does not parse.
var ErrBadPath = errors.New("wire: bad tinker path")

// TinkerScheme prefixes every checkpoint path.
const TinkerScheme = "tinker://"

// Checkpoint kinds in a path (types/checkpoint.py): weights/<name> is a
// training checkpoint, sampler_weights/<name> a sampler one.
const (
	KindWeights        = "weights"
	KindSamplerWeights = "sampler_weights"
)

// TinkerPath is a parsed tinker://<run>/<kind>/<name>.
type TinkerPath struct {
	Run  string // training run id (the model id)
	Kind string // KindWeights or KindSamplerWeights
	Name string // checkpoint name
}

// String returns tinker://<run>/<kind>/<name>.
func (p TinkerPath) String() string { return TinkerScheme + p.Run + "/" + p.Kind + "/" + p.Name }

// CheckpointID returns "<kind>/<name>", the SDK's checkpoint_id.
func (p TinkerPath) CheckpointID() string { return p.Kind + "/" + p.Name }

// CheckpointType returns the SDK's checkpoint_type: "training" or "sampler".
func (p TinkerPath) CheckpointType() string {
	if p.Kind == KindSamplerWeights {
		return "sampler"
	}
	return "training"
}

// LoopsScheme prefixes Baseten Loops' checkpoint paths,
// bt://loops:<run>/(weights|sampler_weights)/<name>: the same three parts.
const LoopsScheme = "bt://loops:"

// ParseTinkerPath parses tinker://<run>/(weights|sampler_weights)/<name>,
// or Baseten Loops' bt://loops:<run>/… form of the same path. Run and name
// must be valid names (ValidName), so a path can never escape a checkpoint
// folder.
func ParseTinkerPath(s string) (TinkerPath, error) {
	scheme := TinkerScheme
	rest, ok := strings.CutPrefix(s, TinkerScheme)
	if !ok {
		scheme = LoopsScheme
		if rest, ok = strings.CutPrefix(s, LoopsScheme); !ok {
			return TinkerPath{}, fmt.Errorf("%w %q: want tinker://<run>/(weights|sampler_weights)/<name> (or bt://loops:<run>/…)", ErrBadPath, s)
		}
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return TinkerPath{}, fmt.Errorf("%w %q: want 3 parts after %s, got %d", ErrBadPath, s, scheme, len(parts))
	}
	p := TinkerPath{Run: parts[0], Kind: parts[1], Name: parts[2]}
	if p.Kind != KindWeights && p.Kind != KindSamplerWeights {
		return TinkerPath{}, fmt.Errorf("%w %q: kind %q, want weights or sampler_weights", ErrBadPath, s, p.Kind)
	}
	if err := ValidName(p.Run); err != nil {
		return TinkerPath{}, fmt.Errorf("%w %q: run: %v", ErrBadPath, s, err)
	}
	if err := ValidName(p.Name); err != nil {
		return TinkerPath{}, fmt.Errorf("%w %q: name: %v", ErrBadPath, s, err)
	}
	return p, nil
}

// ValidName checks a checkpoint or run name: the rules of
// policy.ValidRunName (1–128 of letters, digits, '-', '_', '.', not
// starting with '.'), so "..", "a/b" and "" are refused.
func ValidName(name string) error {
	if err := policy.ValidRunName(name); err != nil {
		return errors.New(strings.Replace(err.Error(), "run name", "name", 1))
	}
	return nil
}
