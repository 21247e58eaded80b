package checkpoint

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound reports a checkpoint, run or file that does not exist.
	ErrNotFound = errors.New("checkpoint: not found")
	// ErrExists reports a checkpoint that already exists where a new one
	// was to be installed.
	ErrExists = errors.New("checkpoint: already exists")
	// ErrBadName reports a run, checkpoint or kind name that is not allowed.
	ErrBadName = errors.New("checkpoint: bad name")
	// ErrBadMeta reports checkpoint metadata that cannot be saved.
	ErrBadMeta = errors.New("checkpoint: bad metadata")
	// ErrCorrupt reports a checkpoint whose files do not match its manifest,
	// or whose manifest does not decode. Errors matching it are usually a
	// *CorruptError.
	ErrCorrupt = errors.New("checkpoint: corrupt")
	// ErrBadURI reports a checkpoint URI that does not parse.
	ErrBadURI = errors.New("checkpoint: bad URI")
	// ErrNotAdapter reports a checkpoint without the PEFT adapter files
	// that Export needs.
	ErrNotAdapter = errors.New("checkpoint: not a PEFT adapter")
	// ErrBadSignature reports a download URL whose signature does not match.
	ErrBadSignature = errors.New("checkpoint: bad signature")
	// ErrExpired reports a download URL past its expiry time.
	ErrExpired = errors.New("checkpoint: signature expired")
	// ErrWeakKey reports a Signer key shorter than MinKeyLen.
	ErrWeakKey = errors.New("checkpoint: signing key too short")
)

// CorruptError says which checkpoint and which file failed verification,
// and how. It matches ErrCorrupt with errors.Is.
type CorruptError struct {
	// Dir is the checkpoint folder (or temporary folder) checked.
	Dir string
	// File is the file at fault, relative to Dir; empty if the fault is
	// the manifest as a whole.
	File string
	// Problem says what is wrong, e.g. "sha256 mismatch".
	Problem string
}

func (e *CorruptError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("checkpoint: corrupt %s: %s", e.Dir, e.Problem)
	}
	return fmt.Sprintf("checkpoint: corrupt %s: file %s: %s", e.Dir, e.File, e.Problem)
}

// Unwrap makes a *CorruptError match ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
