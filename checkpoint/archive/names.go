package archive

import (
	"fmt"
	"path"
	"strings"
)

// MaxNameLen bounds an entry name in bytes; MaxSegmentLen bounds one path
// segment (most file systems allow 255 bytes per name).
const (
	MaxNameLen    = 1024
	MaxSegmentLen = 255
)

// CheckName reports whether name is a safe relative entry name: slash
// separated, not empty, not absolute, in clean form (no "", "." or ".."
// segments), without backslashes, colons or control characters, each segment
// at most [MaxSegmentLen] bytes and the whole at most [MaxNameLen] bytes.
// The returned error says what is wrong; it does not wrap [ErrUnsafe].
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("name is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("name is %d bytes, at most %d allowed", len(name), MaxNameLen)
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("name %q is absolute", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '\\' || r == ':' {
			return fmt.Errorf("name %q has %q; control characters, '\\' and ':' are not allowed", name, r)
		}
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch {
		case seg == "" || seg == ".":
			return fmt.Errorf("name %q is not in clean form (empty or '.' segment)", name)
		case seg == "..":
			return fmt.Errorf("name %q has a '..' segment", name)
		case len(seg) > MaxSegmentLen:
			return fmt.Errorf("name %q has a segment of %d bytes, at most %d allowed", name, len(seg), MaxSegmentLen)
		}
	}
	if path.Clean(name) != name {
		return fmt.Errorf("name %q is not in clean form", name)
	}
	return nil
}
