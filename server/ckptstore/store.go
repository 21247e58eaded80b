// Package ckptstore lets a server find checkpoints in a checkpoint.Store
// folder: it implements server.CheckpointStore (with Record, ArchiveURL and
// Delete) over it, so that a trainer process and a sampler process sharing
// the folder serve each other's checkpoints.
//
// Tenants: the first API key (its server-side owner id) to record a run
// owns it; the owner id is kept in <root>/<run>/.owner, written once and
// atomically. Other keys do not see an owned run. A run recorded by no
// server (no .owner file, e.g. written by an offline training job) is
// visible to every key.
package ckptstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/wire"
)

// OwnerFile is the name of a run's owner file.
const OwnerFile = ".owner"

// ErrNotFound matches a checkpoint that is absent or not the caller's.
var ErrNotFound = errors.New("ckptstore: checkpoint not found")

// Options configure archive links. ArchiveBaseURL is where a
// checkpoint.Handler serving this store is mounted; with a Signer, the
// server's archive endpoint answers signed, expiring URLs to it.
type Options struct {
	ArchiveBaseURL string
	Signer         checkpoint.Signer
	TTL            time.Duration // default checkpoint.DefaultTTL
}

// Store adapts a checkpoint.Store; safe for concurrent use, also by
// several processes sharing the folder.
type Store struct {
	st   *checkpoint.Store
	opts Options
}

var (
	_ server.CheckpointStore    = (*Store)(nil)
	_ server.CheckpointRecorder = (*Store)(nil)
	_ server.ArchiveLinker      = (*Store)(nil)
	_ server.CheckpointDeleter  = (*Store)(nil)
)

// New returns an adapter of st.
func New(st *checkpoint.Store, opts Options) *Store { return &Store{st: st, opts: opts} }

func (s *Store) ownerPath(run string) (string, error) {
	if err := checkpoint.ValidRun(run); err != nil {
		return "", err
	}
	return filepath.Join(s.st.Root(), run, OwnerFile), nil
}

// owner returns the run's owner id, or "" when none was recorded.
func (s *Store) owner(run string) (string, error) {
	p, err := s.ownerPath(run)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ckptstore: read owner of %s: %w", run, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func (s *Store) check(owner, run string) error {
	o, err := s.owner(run)
	if err != nil {
		return err
	}
	if o != "" && o != owner {
		return fmt.Errorf("%w: run %s", ErrNotFound, run)
	}
	return nil
}

// Record makes owner the owner of ck's run, unless the run has one: then
// it must be owner.
func (s *Store) Record(_ context.Context, owner string, ck server.Checkpoint) error {
	p, err := s.ownerPath(ck.Path.Run)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("ckptstore: record %s: %w", ck.Path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".owner-*")
	if err != nil {
		return fmt.Errorf("ckptstore: record %s: %w", ck.Path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(owner + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("ckptstore: record %s: %w", ck.Path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("ckptstore: record %s: %w", ck.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("ckptstore: record %s: %w", ck.Path, err)
	}
	// A hard link never replaces an existing file: the first owner stays.
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("ckptstore: record %s: %w", ck.Path, err)
	}
	if o, err := s.owner(ck.Path.Run); err != nil {
		return err
	} else if o != owner {
		return fmt.Errorf("ckptstore: record %s: run %s belongs to another key", ck.Path, ck.Path.Run)
	}
	return nil
}

func convert(p wire.TinkerPath, ck checkpoint.Checkpoint) server.Checkpoint {
	return server.Checkpoint{Path: p, Ref: ck.Ref(), Base: ck.BaseModel, Created: ck.Created}
}

func (s *Store) get(owner string, p wire.TinkerPath) (checkpoint.Checkpoint, error) {
	if err := s.check(owner, p.Run); err != nil {
		return checkpoint.Checkpoint{}, err
	}
	ck, err := s.st.Get(p.Run, policy.Kind(p.Kind), p.Name)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return checkpoint.Checkpoint{}, fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	return ck, err
}

// Resolve returns owner's checkpoint at p.
func (s *Store) Resolve(_ context.Context, owner string, p wire.TinkerPath) (server.Checkpoint, error) {
	ck, err := s.get(owner, p)
	if err != nil {
		return server.Checkpoint{}, err
	}
	return convert(p, ck), nil
}

// List returns owner's checkpoints of run (none for another key's run).
func (s *Store) List(_ context.Context, owner, run string) ([]server.Checkpoint, error) {
	if err := s.check(owner, run); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	cks, err := s.st.List(run)
	out := make([]server.Checkpoint, 0, len(cks))
	for _, ck := range cks {
		out = append(out, convert(wire.TinkerPath{Run: ck.Run, Kind: string(ck.Kind), Name: ck.Name}, ck))
	}
	return out, err
}

// ArchiveURL returns a signed URL of p's archive.
func (s *Store) ArchiveURL(_ context.Context, owner string, p wire.TinkerPath) (string, time.Time, error) {
	if s.opts.ArchiveBaseURL == "" {
		return "", time.Time{}, errors.New("ckptstore: archive download not configured (no ArchiveBaseURL)")
	}
	ck, err := s.get(owner, p)
	if err != nil {
		return "", time.Time{}, err
	}
	src, err := s.st.Source(ck, checkpoint.SourceOptions{Kind: checkpoint.SourceURL, BaseURL: s.opts.ArchiveBaseURL, Signer: s.opts.Signer, TTL: s.opts.TTL})
	if err != nil {
		return "", time.Time{}, err
	}
	return src.URL, src.Expires, nil
}

// Delete removes owner's checkpoint at p.
func (s *Store) Delete(_ context.Context, owner string, p wire.TinkerPath) error {
	if _, err := s.get(owner, p); err != nil {
		return err
	}
	return s.st.Delete(p.Run, policy.Kind(p.Kind), p.Name)
}
