// Package atomicfile replaces a file's contents atomically: readers see the
// old file or the whole new one, never a torn write.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to path through a synced temporary file in the same
// folder and a rename. The file gets mode 0644, as os.WriteFile(path, data,
// 0o644) gives under the usual umask (model folders are read by other
// tools and users). The temporary file is removed on failure.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
