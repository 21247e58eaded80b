package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
)

// Fault-injection points of Save and installs, in order. A crash between
// any two leaves no checkpoint visible before "renamed" and the whole
// checkpoint after it.
const (
	stepTemp     = "temp"     // temp folder created
	stepWritten  = "written"  // writer returned
	stepSynced   = "synced"   // files hashed and fsynced
	stepManifest = "manifest" // manifest written and fsynced
	stepRename   = "rename"   // parent folders ready, about to rename
	stepRenamed  = "renamed"  // renamed into place, parent not yet fsynced
	stepTrashed  = "trashed"  // Delete: renamed out of the layout, not yet removed
)

var saveSteps = []string{stepTemp, stepWritten, stepSynced, stepManifest, stepRename, stepRenamed}

// Save writes a new checkpoint atomically. write is called once with an
// empty temporary folder inside the root and puts the checkpoint's files
// there (regular files and folders only; names as File.Name allows, not
// manifest.json). Save then hashes and fsyncs every file and folder, writes
// and fsyncs manifest.json, renames the folder to <root>/<run>/<kind>/<name>
// and fsyncs the parent. If meta.Created is zero it is set to now (UTC).
//
// A checkpoint of the same run, kind and name must not exist: Save returns
// an error matching ErrExists (delete it first to replace it). On any error
// the temporary folder is removed; after a crash it is left for Clean and
// never listed. A panic in write is returned as an error with its stack.
// Cost: write's, plus one read of every byte written.
func (s *Store) Save(ctx context.Context, meta Meta, write func(dir string) error) (ck Checkpoint, err error) {
	if err := ctx.Err(); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: save: %w", context.Cause(ctx))
	}
	if meta.Created.IsZero() {
		meta.Created = s.now().UTC()
	}
	if err := meta.Validate(); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: save: %w", err)
	}
	id := meta.Run + "/" + string(meta.Kind) + "/" + meta.Name
	final, _ := s.Dir(meta.Run, meta.Kind, meta.Name)
	if _, err := os.Stat(final); err == nil {
		return Checkpoint{}, fmt.Errorf("%w: %s", ErrExists, id)
	}
	tmp, err := s.mkTemp("save")
	if err != nil {
		return Checkpoint{}, err
	}
	// On error, remove the temp folder. On a panic (a simulated crash in
	// tests) err is still nil here and the folder stays, as after a crash.
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	s.step(stepTemp)
	if err := callWriter(write, tmp); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: save %s: write: %w", id, err)
	}
	s.step(stepWritten)
	if _, err := os.Lstat(filepath.Join(tmp, ManifestName)); err == nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: save %s: writer wrote %s, which the store reserves", id, ManifestName)
	}
	files, err := scanFiles(ctx, tmp, scanOptions{sync: true})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: save %s: %w", id, err)
	}
	if len(files) == 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: save %s: writer wrote no files", id)
	}
	s.step(stepSynced)
	m := Manifest{Format: ManifestFormat, Meta: meta, Files: files}
	data, err := m.Encode()
	if err != nil {
		return Checkpoint{}, err
	}
	if err := writeFileSync(filepath.Join(tmp, ManifestName), data); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: save %s: write manifest: %w", id, err)
	}
	if err := syncDir(tmp); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: save %s: %w", id, err)
	}
	s.step(stepManifest)
	return s.commit(tmp, m)
}

// callWriter runs the caller's writer, turning a panic into an error.
func callWriter(write func(dir string) error, dir string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("writer panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return write(dir)
}

// commit renames a complete, synced temp folder to its place in the layout
// and fsyncs the parent.
func (s *Store) commit(tmp string, m Manifest) (Checkpoint, error) {
	id := m.Run + "/" + string(m.Kind) + "/" + m.Name
	final, err := s.Dir(m.Run, m.Kind, m.Name)
	if err != nil {
		return Checkpoint{}, err
	}
	parent := filepath.Dir(final)
	if err := s.mkdirSync(parent); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: install %s: %w", id, err)
	}
	s.step(stepRename)
	if err := os.Rename(tmp, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Checkpoint{}, fmt.Errorf("%w: %s", ErrExists, id)
		}
		return Checkpoint{}, fmt.Errorf("checkpoint: install %s: %w", id, err)
	}
	s.step(stepRenamed)
	if err := syncDir(parent); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: install %s: renamed but not durable: %w", id, err)
	}
	return Checkpoint{Manifest: m, Dir: final}, nil
}

// mkdirSync creates dir and its missing parents below the root, fsyncing
// the parent of every folder it creates.
func (s *Store) mkdirSync(dir string) error {
	rel, err := filepath.Rel(s.root, dir)
	if err != nil {
		return err
	}
	cur := s.root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		next := filepath.Join(cur, part)
		err := os.Mkdir(next, 0o755)
		switch {
		case err == nil:
			if err := syncDir(cur); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrExist):
			return err
		}
		cur = next
	}
	return nil
}

// installTemp verifies a temp folder holding a complete checkpoint
// (manifest and files, e.g. from a download), fsyncs it and renames it into
// place. If want is not nil, the manifest must name the same run, kind and
// name. If an identical checkpoint (same metadata and files) is already
// installed, installTemp removes tmp and returns the installed one.
func (s *Store) installTemp(ctx context.Context, tmp string, want *URI) (Checkpoint, error) {
	m, err := readManifest(tmp)
	if err != nil {
		return Checkpoint{}, err
	}
	if want != nil && (m.Run != want.Run || m.Kind != want.Kind || m.Name != want.Name) {
		return Checkpoint{}, &CorruptError{Dir: tmp, File: ManifestName,
			Problem: fmt.Sprintf("manifest names %s/%s/%s, want %s/%s/%s", m.Run, m.Kind, m.Name, want.Run, want.Kind, want.Name)}
	}
	files, err := scanFiles(ctx, tmp, scanOptions{sync: true})
	if err != nil {
		return Checkpoint{}, err
	}
	if err := compareFiles(tmp, m.Files, files); err != nil {
		return Checkpoint{}, err
	}
	if _, err := hashFile(ctx, filepath.Join(tmp, ManifestName), true); err != nil {
		return Checkpoint{}, err
	}
	s.step(stepManifest)
	ck, err := s.commit(tmp, m)
	if errors.Is(err, ErrExists) {
		have, gerr := s.Get(m.Run, m.Kind, m.Name)
		if gerr == nil && sameCheckpoint(have.Manifest, m) {
			_ = os.RemoveAll(tmp)
			return have, nil
		}
	}
	return ck, err
}

// sameCheckpoint reports whether two manifests describe the same content.
func sameCheckpoint(a, b Manifest) bool {
	return a.Run == b.Run && a.Kind == b.Kind && a.Name == b.Name && a.Version == b.Version &&
		a.Step == b.Step && a.BaseModel == b.BaseModel && a.Created.Equal(b.Created) &&
		slices.Equal(a.Files, b.Files)
}
