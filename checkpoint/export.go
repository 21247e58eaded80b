package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// PEFT adapter file names, as Hugging Face PEFT, vLLM and SGLang load them.
const (
	AdapterConfig      = "adapter_config.json"
	AdapterSafetensors = "adapter_model.safetensors"
	AdapterBin         = "adapter_model.bin"
)

// ExportOptions tunes Export. The zero value refuses an existing target.
type ExportOptions struct {
	// Overwrite replaces an existing target folder. The old folder is
	// renamed aside, the new one renamed in, then the old one removed: the
	// target is briefly absent but never half written.
	Overwrite bool
}

// AdapterFiles returns the checkpoint's PEFT adapter files: the adapter
// config and the weights (safetensors, and the legacy .bin if present), or
// an error matching ErrNotAdapter naming what is missing.
func AdapterFiles(ck Checkpoint) ([]File, error) {
	cfg, ok := ck.File(AdapterConfig)
	if !ok {
		return nil, fmt.Errorf("%w: %s has no %s", ErrNotAdapter, ck.URI(), AdapterConfig)
	}
	files := []File{cfg}
	for _, name := range []string{AdapterSafetensors, AdapterBin} {
		if f, ok := ck.File(name); ok {
			files = append(files, f)
		}
	}
	if len(files) == 1 {
		return nil, fmt.Errorf("%w: %s has no %s or %s", ErrNotAdapter, ck.URI(), AdapterSafetensors, AdapterBin)
	}
	return files, nil
}

// Export copies the checkpoint's PEFT adapter files (see AdapterFiles) into
// the folder target, which vLLM (load_lora_adapter), SGLang and PEFT
// (PeftModel.from_pretrained) can then load. It writes a temporary folder
// beside target, checks every copied byte against the manifest's SHA-256,
// fsyncs, renames into place and fsyncs the parent, so target is either
// absent or complete. An existing target is ErrExists unless
// opts.Overwrite. It returns the exported file names. Cost: one read and one
// write of the adapter.
func Export(ctx context.Context, ck Checkpoint, target string, opts ExportOptions) ([]string, error) {
	files, err := AdapterFiles(ck)
	if err != nil {
		return nil, err
	}
	target, err = filepath.Abs(target)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: export: %w", err)
	}
	parent, base := filepath.Split(target)
	if base == "" {
		return nil, fmt.Errorf("checkpoint: export: target %q names no folder", target)
	}
	if _, err := os.Lstat(target); err == nil && !opts.Overwrite {
		return nil, fmt.Errorf("%w: export target %s (set Overwrite to replace it)", ErrExists, target)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: export: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: export: %w", err)
	}
	defer os.RemoveAll(tmp) // gone already once renamed
	names := make([]string, len(files))
	for i, f := range files {
		if err := copyVerified(ctx, ck, f, filepath.Join(tmp, f.Name)); err != nil {
			return nil, fmt.Errorf("checkpoint: export %s: %w", ck.URI(), err)
		}
		names[i] = f.Name
	}
	if err := syncDir(tmp); err != nil {
		return nil, fmt.Errorf("checkpoint: export: %w", err)
	}
	if err := renameInto(tmp, target, opts.Overwrite); err != nil {
		return nil, fmt.Errorf("checkpoint: export %s to %s: %w", ck.URI(), target, err)
	}
	if err := syncDir(parent); err != nil {
		return nil, fmt.Errorf("checkpoint: export: %w", err)
	}
	return names, nil
}

// copyVerified copies one checkpoint file to dst, fsyncs it, and checks
// size and SHA-256 of the bytes copied against the manifest.
func copyVerified(ctx context.Context, ck Checkpoint, f File, dst string) error {
	in, err := os.Open(ck.Path(f.Name))
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), ctxReader{ctx: ctx, r: in})
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != f.Size {
		return &CorruptError{Dir: ck.Dir, File: f.Name, Problem: fmt.Sprintf("size %d, manifest says %d", n, f.Size)}
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 {
		return &CorruptError{Dir: ck.Dir, File: f.Name, Problem: fmt.Sprintf("sha256 %s, manifest says %s", sum, f.SHA256)}
	}
	return nil
}

// renameInto renames the folder tmp to target. With overwrite, an existing
// target is first renamed aside and removed after.
func renameInto(tmp, target string, overwrite bool) error {
	err := os.Rename(tmp, target)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	if !overwrite {
		return fmt.Errorf("%w: %s", ErrExists, target)
	}
	old := filepath.Join(filepath.Dir(tmp), strings.Replace(filepath.Base(tmp), ".tmp-", ".old-", 1))
	if err := os.Rename(target, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		_ = os.Rename(old, target) // put the old one back
		return err
	}
	return os.RemoveAll(old)
}
