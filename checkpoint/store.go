package checkpoint

import (
	"cmp"
	"context"
	"crypto/rand"
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

	"github.com/tandemrl/tandem/policy"
)

// Store is a folder of checkpoints laid out as <root>/<run>/<kind>/<name>/.
// It is safe for concurrent use, also by several processes sharing the
// root. Methods that take a context may do long I/O (hashing, copying);
// the others read a few small files.
type Store struct {
	root string
	now  func() time.Time
	// fault, when set, is called between the steps of Save and installs;
	// tests use it to simulate a crash (by panicking) at each step.
	fault func(step string)
}

// Open returns the store rooted at root, creating the folder if needed.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("checkpoint: open store: root folder is empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open store %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: open store %s: %w", root, err)
	}
	return &Store{root: abs, now: time.Now}, nil
}

// Root returns the store's absolute root folder.
func (s *Store) Root() string { return s.root }

// Dir returns the folder a checkpoint has or would have; it does not check
// that it exists.
func (s *Store) Dir(run string, kind policy.Kind, name string) (string, error) {
	if err := validID(run, kind, name); err != nil {
		return "", err
	}
	return filepath.Join(s.root, run, string(kind), name), nil
}

func (s *Store) step(name string) {
	if s.fault != nil {
		s.fault(name)
	}
}

// Checkpoint is a checkpoint found on disk: its manifest and its folder.
// It is a value; the files it describes are not read until asked.
type Checkpoint struct {
	Manifest
	// Dir is the checkpoint's absolute folder.
	Dir string `json:"dir"`
}

// Path returns the local path of one of the checkpoint's files.
func (c Checkpoint) Path(file string) string {
	return filepath.Join(c.Dir, filepath.FromSlash(file))
}

// URI returns the checkpoint's tinker:// URI.
func (c Checkpoint) URI() URI {
	return URI{Scheme: SchemeTinker, Run: c.Run, Kind: c.Kind, Name: c.Name}
}

// Ref returns the checkpoint as a policy reference, with its tinker:// URI.
func (c Checkpoint) Ref() policy.Ref {
	return policy.Ref{Run: c.Run, Version: c.Version, Name: c.Name, URI: c.URI().String(), Kind: c.Kind, Created: c.Created}
}

// Verify rehashes every file and checks it against the manifest: same set
// of files, sizes and SHA-256s. A mismatch is a *CorruptError naming the
// file. Cost: one read of every byte.
func (c Checkpoint) Verify(ctx context.Context) error {
	got, err := scanFiles(ctx, c.Dir, scanOptions{})
	if err != nil {
		return fmt.Errorf("checkpoint: verify %s: %w", c.Dir, err)
	}
	return compareFiles(c.Dir, c.Files, got)
}

// OpenDir reads the checkpoint in dir, anywhere on disk, from its manifest.
// It does not hash the files; call Verify for that.
func OpenDir(dir string) (Checkpoint, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: open %s: %w", dir, err)
	}
	m, err := readManifest(abs)
	if err != nil {
		return Checkpoint{}, err
	}
	return Checkpoint{Manifest: m, Dir: abs}, nil
}

func readManifest(dir string) (Manifest, error) {
	f, err := os.Open(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, fmt.Errorf("%w: no checkpoint at %s", ErrNotFound, dir)
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("checkpoint: open %s: %w", dir, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestSize+1))
	if err != nil {
		return Manifest{}, fmt.Errorf("checkpoint: read manifest in %s: %w", dir, err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return Manifest{}, &CorruptError{Dir: dir, File: ManifestName, Problem: err.Error()}
	}
	return m, nil
}

// Get returns the checkpoint run/kind/name, or an error matching
// ErrNotFound. A manifest that disagrees with the folder it sits in is
// corrupt.
func (s *Store) Get(run string, kind policy.Kind, name string) (Checkpoint, error) {
	dir, err := s.Dir(run, kind, name)
	if err != nil {
		return Checkpoint{}, err
	}
	ck, err := OpenDir(dir)
	if err != nil {
		return Checkpoint{}, err
	}
	if ck.Run != run || ck.Kind != kind || ck.Name != name {
		return Checkpoint{}, &CorruptError{Dir: dir, File: ManifestName,
			Problem: fmt.Sprintf("manifest names %s/%s/%s", ck.Run, ck.Kind, ck.Name)}
	}
	return ck, nil
}

// Runs returns the names of runs that have at least one checkpoint folder,
// sorted.
func (s *Store) Runs() ([]string, error) {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list runs in %s: %w", s.root, err)
	}
	var runs []string
	for _, e := range ents {
		if !e.IsDir() || ValidRun(e.Name()) != nil {
			continue
		}
		for _, kind := range []policy.Kind{policy.SamplerWeights, policy.State} {
			names, _ := s.names(e.Name(), kind)
			if len(names) > 0 {
				runs = append(runs, e.Name())
				break
			}
		}
	}
	return runs, nil
}

// names lists the folder names under <run>/<kind> that are valid names.
func (s *Store) names(run string, kind policy.Kind) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.root, run, string(kind)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list %s/%s: %w", run, kind, err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && ValidName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// List returns the run's checkpoints of both kinds, ordered by version,
// then kind, then name. Folders without a manifest are skipped (nothing
// the store writes looks like that); checkpoints whose manifest is corrupt
// are left out and reported in the returned error, joined, alongside the
// valid ones. A run with no checkpoints gives an empty list, not an error.
func (s *Store) List(run string) ([]Checkpoint, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	var out []Checkpoint
	var errs []error
	for _, kind := range []policy.Kind{policy.SamplerWeights, policy.State} {
		names, err := s.names(run, kind)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, name := range names {
			ck, err := s.Get(run, kind, name)
			switch {
			case errors.Is(err, ErrNotFound):
			case err != nil:
				errs = append(errs, err)
			default:
				out = append(out, ck)
			}
		}
	}
	slices.SortFunc(out, func(a, b Checkpoint) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out, errors.Join(errs...)
}

// Latest returns the run's checkpoint of the given kind with the highest
// version (ties: the later created, then the greater name), or an error
// matching ErrNotFound. Corrupt checkpoints are skipped.
func (s *Store) Latest(run string, kind policy.Kind) (Checkpoint, error) {
	if err := ValidKind(kind); err != nil {
		return Checkpoint{}, err
	}
	all, err := s.List(run)
	if all == nil && err != nil {
		return Checkpoint{}, err
	}
	var best *Checkpoint
	for i := range all {
		c := &all[i]
		if c.Kind != kind {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(c.Version, best.Version), c.Created.Compare(best.Created), cmp.Compare(c.Name, best.Name)) > 0 {
			best = c
		}
	}
	if best == nil {
		return Checkpoint{}, fmt.Errorf("%w: run %s has no %s checkpoint", ErrNotFound, run, kind)
	}
	return *best, nil
}

// Delete removes a checkpoint. It first renames the folder out of the
// layout (so no reader ever sees it half removed), fsyncs the parent, then
// removes the files. Deleting a missing checkpoint is an error matching
// ErrNotFound.
func (s *Store) Delete(run string, kind policy.Kind, name string) error {
	dir, err := s.Dir(run, kind, name)
	if err != nil {
		return err
	}
	trash, err := s.tempName(trashPrefix)
	if err != nil {
		return err
	}
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s/%s/%s", ErrNotFound, run, kind, name)
		}
		return fmt.Errorf("checkpoint: delete %s/%s/%s: %w", run, kind, name, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("checkpoint: delete %s/%s/%s: %w", run, kind, name, err)
	}
	s.step(stepTrashed)
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("checkpoint: delete %s/%s/%s: remove %s: %w", run, kind, name, trash, err)
	}
	return nil
}

// tempName returns a fresh, unused path in the root with the given prefix.
func (s *Store) tempName(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("checkpoint: temp name: %w", err)
	}
	return filepath.Join(s.root, prefix+hex.EncodeToString(b[:])), nil
}

// mkTemp creates a fresh temporary folder in the root.
func (s *Store) mkTemp(purpose string) (string, error) {
	dir, err := os.MkdirTemp(s.root, tempPrefix+purpose+"-")
	if err != nil {
		return "", fmt.Errorf("checkpoint: create temp folder in %s: %w", s.root, err)
	}
	return dir, nil
}

// Resolve returns the checkpoint a URI names: a tinker:// or bt:// URI is
// looked up in this store; a local path is opened wherever it is.
func (s *Store) Resolve(uri string) (Checkpoint, error) {
	u, err := ParseURI(uri)
	if err != nil {
		return Checkpoint{}, err
	}
	if u.Scheme == SchemeLocal {
		return OpenDir(u.Path)
	}
	return s.Get(u.Run, u.Kind, u.Name)
}

// ResolveRef returns the checkpoint a policy reference names: by its URI
// when set, else by its run, kind and name.
func (s *Store) ResolveRef(ref policy.Ref) (Checkpoint, error) {
	if strings.TrimSpace(ref.URI) != "" {
		return s.Resolve(ref.URI)
	}
	return s.Get(ref.Run, ref.Kind, ref.Name)
}
