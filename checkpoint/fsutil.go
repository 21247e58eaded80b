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
	"slices"
	"strings"
	"time"
)

// Prefixes of the store's own temporary entries in the root. Run names
// cannot start with '.', so these never collide with the layout.
const (
	tempPrefix  = ".tmp-"
	trashPrefix = ".trash-"
)

// syncDir fsyncs a folder, making renames and creations in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	return nil
}

// writeFileSync writes data to a new file and fsyncs it.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// scanOptions says what scanFiles does besides listing and hashing.
type scanOptions struct {
	sync bool // fsync every file and folder
}

// scanFiles lists the files under dir (except the manifest), hashing each,
// in name order. It refuses symlinks, special files and names that a
// manifest cannot hold. With sync it fsyncs every file and folder, so a
// later rename publishes durable contents. Cost: one read of every byte.
func scanFiles(ctx context.Context, dir string, opts scanOptions) ([]File, error) {
	var files []File
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			if rel != "." {
				if err := validFileName(rel); err != nil {
					return &CorruptError{Dir: dir, File: rel, Problem: err.Error()}
				}
			}
			dirs = append(dirs, p)
			return nil
		case !d.Type().IsRegular():
			return &CorruptError{Dir: dir, File: rel, Problem: fmt.Sprintf("is a %s, want a regular file", d.Type())}
		case rel == ManifestName:
			return nil
		}
		if err := validFileName(rel); err != nil {
			return &CorruptError{Dir: dir, File: rel, Problem: err.Error()}
		}
		if len(files) >= MaxFiles {
			return &CorruptError{Dir: dir, Problem: fmt.Sprintf("more than %d files", MaxFiles)}
		}
		f, err := hashFile(ctx, p, opts.sync)
		if err != nil {
			return err
		}
		f.Name = rel
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if opts.sync {
		for _, d := range slices.Backward(dirs) {
			if err := syncDir(d); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}

// hashFile returns the size and SHA-256 of the file at p, fsyncing it
// first when sync is set.
func hashFile(ctx context.Context, p string, sync bool) (File, error) {
	f, err := os.Open(p)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	if sync {
		if err := f.Sync(); err != nil {
			return File{}, fmt.Errorf("fsync %s: %w", p, err)
		}
	}
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx: ctx, r: f})
	if err != nil {
		return File{}, fmt.Errorf("hash %s: %w", p, err)
	}
	return File{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// compareFiles reports the first difference between the files a manifest
// lists (want) and the files found (got), both sorted by name.
func compareFiles(dir string, want, got []File) error {
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i].Name < got[j].Name):
			return &CorruptError{Dir: dir, File: want[i].Name, Problem: "missing"}
		case i == len(want) || got[j].Name < want[i].Name:
			return &CorruptError{Dir: dir, File: got[j].Name, Problem: "not listed in the manifest"}
		case want[i].Size != got[j].Size:
			return &CorruptError{Dir: dir, File: want[i].Name,
				Problem: fmt.Sprintf("size %d, manifest says %d", got[j].Size, want[i].Size)}
		case want[i].SHA256 != got[j].SHA256:
			return &CorruptError{Dir: dir, File: want[i].Name,
				Problem: fmt.Sprintf("sha256 %s, manifest says %s", got[j].SHA256, want[i].SHA256)}
		}
		i++
		j++
	}
	return nil
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

// Clean removes the store's leftover temporary folders (from saves,
// downloads and deletes that crashed or were interrupted) whose last change
// is at least minAge old, and returns how many it removed. Call it with
// minAge 0 at start-up when no other process writes to the root; with other
// writers, use a minAge longer than any save takes.
func (s *Store) Clean(ctx context.Context, minAge time.Duration) (int, error) {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: clean %s: %w", s.root, err)
	}
	now := s.now()
	removed := 0
	var errs []error
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return removed, context.Cause(ctx)
		}
		name := e.Name()
		if !strings.HasPrefix(name, tempPrefix) && !strings.HasPrefix(name, trashPrefix) {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if minAge > 0 && now.Sub(info.ModTime()) < minAge {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.root, name)); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("checkpoint: clean %s: %w", s.root, err)
	}
	return removed, nil
}

// statSize returns the size of the file at p.
func statSize(p string) (int64, error) {
	st, err := os.Stat(p)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
