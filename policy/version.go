package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is a policy version: the number of optimizer steps applied since
// the base model with a fresh adapter (version 0).
type Version int64

// Staleness is the number of optimizer steps between the version that
// generated a trajectory and the version the learner is about to update:
// when the learner is at version s, a group of version v has staleness s−v.
func Staleness(learner, generated Version) int64 { return int64(learner - generated) }

// ErrBadTag reports a tag that does not parse.
var ErrBadTag = errors.New("policy: bad tag")

// Tag names one version of one run, written "run@version".
type Tag struct {
	Run     string
	Version Version
}

// String returns the tag as "run@version".
func (t Tag) String() string { return t.Run + "@" + strconv.FormatInt(int64(t.Version), 10) }

// ParseTag parses "run@17". The run name must be non-empty and must not
// contain '@' or '/'; the version must be a non-negative integer.
func ParseTag(s string) (Tag, error) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return Tag{}, fmt.Errorf("%w %q: want run@version, e.g. arith-grpo@17", ErrBadTag, s)
	}
	run, num := s[:i], s[i+1:]
	if err := ValidRunName(run); err != nil {
		return Tag{}, fmt.Errorf("%w %q: %v", ErrBadTag, s, err)
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 {
		return Tag{}, fmt.Errorf("%w %q: version %q is not a non-negative integer", ErrBadTag, s, num)
	}
	return Tag{Run: run, Version: Version(v)}, nil
}

// ValidRunName reports whether name can name a run: 1–128 characters from
// letters, digits, '-', '_' and '.', not starting with '.'.
func ValidRunName(name string) error {
	if name == "" {
		return errors.New("run name is empty")
	}
	if len(name) > 128 {
		return fmt.Errorf("run name is %d characters, at most 128 allowed", len(name))
	}
	if name[0] == '.' {
		return fmt.Errorf("run name %q starts with '.'", name)
	}
	for _, r := range name {
		ok := r == '-' || r == '_' || r == '.' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("run name %q has %q; allowed are letters, digits, '-', '_' and '.'", name, r)
		}
	}
	return nil
}
