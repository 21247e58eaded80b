package servertest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/wire"
)

// Store is an in-memory server.CheckpointStore that servers can share, as
// a trainer process and a sampler process share a checkpoint folder. It
// records what servers save (server.CheckpointRecorder) and links archives
// (server.ArchiveLinker) to ArchiveBase + path. Safe for concurrent use.
type Store struct {
	ArchiveBase string
	// OnList, when set, is called at the end of each List with its
	// arguments, once the answer is fixed (outside the lock, on the
	// caller's goroutine): a test learns from it that a caller has looked,
	// and so what it could have found, with no sleep. It must not block.
	OnList func(owner, run string)

	mu  sync.Mutex
	cks map[string]owned // by tinker path
}

type owned struct {
	owner string
	ck    server.Checkpoint
}

var (
	_ server.CheckpointStore    = (*Store)(nil)
	_ server.CheckpointRecorder = (*Store)(nil)
	_ server.ArchiveLinker      = (*Store)(nil)
	_ server.CheckpointDeleter  = (*Store)(nil)
)

// Delete removes owner's checkpoint at p.
func (s *Store) Delete(ctx context.Context, owner string, p wire.TinkerPath) error {
	if _, err := s.Resolve(ctx, owner, p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cks, p.String())
	return nil
}

// ErrNotFound is returned for a path the store does not hold for the owner.
var ErrNotFound = fmt.Errorf("servertest: checkpoint not found")

// Record stores ck for owner.
func (s *Store) Record(_ context.Context, owner string, ck server.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cks == nil {
		s.cks = map[string]owned{}
	}
	s.cks[ck.Path.String()] = owned{owner: owner, ck: ck}
	return nil
}

// Resolve returns owner's checkpoint at p.
func (s *Store) Resolve(_ context.Context, owner string, p wire.TinkerPath) (server.Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.cks[p.String()]
	if !ok || o.owner != owner {
		return server.Checkpoint{}, fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	return o.ck, nil
}

// List returns owner's checkpoints of run, oldest first.
func (s *Store) List(_ context.Context, owner, run string) ([]server.Checkpoint, error) {
	s.mu.Lock()
	var out []server.Checkpoint
	for _, o := range s.cks {
		if o.owner == owner && o.ck.Path.Run == run {
			out = append(out, o.ck)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Path.String() < out[j].Path.String() })
	if s.OnList != nil {
		s.OnList(owner, run)
	}
	return out, nil
}

// ArchiveURL links to ArchiveBase/<run>/<kind>/<name>.tar.gz, valid 15 minutes.
func (s *Store) ArchiveURL(ctx context.Context, owner string, p wire.TinkerPath) (string, time.Time, error) {
	if _, err := s.Resolve(ctx, owner, p); err != nil {
		return "", time.Time{}, err
	}
	return s.ArchiveBase + "/" + p.Run + "/" + p.Kind + "/" + p.Name + ".tar.gz", time.Now().Add(15 * time.Minute), nil
}
