package local

import (
	"sync"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
)

// Shelf holds the newest published adapter snapshots in memory, keyed by
// URI, so an in-process sampler loads a version without touching the disk.
// Snapshots are immutable once put. It keeps the Keep newest (default 16);
// samplers hold on to what they serve, so dropping an entry never breaks a
// running rollout. The zero value is ready to use; it is safe for concurrent use.
type Shelf struct {
	Keep int

	mu    sync.Mutex
	items map[string]shelved
	order []string
}

type shelved struct {
	version policy.Version
	ad      *engine.Adapter[float32]
}

// Put stores ad (which the caller must not change afterwards) under uri.
func (s *Shelf) Put(uri string, v policy.Version, ad *engine.Adapter[float32]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		s.items = map[string]shelved{}
	}
	if _, ok := s.items[uri]; !ok {
		s.order = append(s.order, uri)
	}
	s.items[uri] = shelved{version: v, ad: ad}
	keep := s.Keep
	if keep <= 0 {
		keep = 16
	}
	for len(s.order) > keep {
		delete(s.items, s.order[0])
		s.order = s.order[1:]
	}
}

// Get returns the snapshot under uri.
func (s *Shelf) Get(uri string) (policy.Version, *engine.Adapter[float32], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[uri]
	return it.version, it.ad, ok
}
