package policy

import (
	"context"
	"fmt"
	"sync"
)

// Registry records the versions a run has published, in order, and lets
// samplers and the learner wait for a version to appear. The zero value is
// ready to use. It is safe for concurrent use.
type Registry struct {
	mu      sync.Mutex
	refs    []Ref         // published, in increasing version order
	changed chan struct{} // closed and replaced on every publish
}

// Publish records ref as published. Versions must increase: publishing a
// version not greater than the latest is an error.
func (r *Registry) Publish(ref Ref) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.refs); n > 0 && ref.Version <= r.refs[n-1].Version {
		return fmt.Errorf("policy: publish version %d: latest published is %d", ref.Version, r.refs[n-1].Version)
	}
	r.refs = append(r.refs, ref)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	return nil
}

// Latest returns the newest published ref and true, or false if none.
func (r *Registry) Latest() (Ref, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.refs) == 0 {
		return Ref{}, false
	}
	return r.refs[len(r.refs)-1], true
}

// Get returns the ref published for version v.
func (r *Registry) Get(v Version) (Ref, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.refs) - 1; i >= 0; i-- {
		if r.refs[i].Version == v {
			return r.refs[i], true
		}
		if r.refs[i].Version < v {
			break
		}
	}
	return Ref{}, false
}

// List returns a copy of every published ref, oldest first.
func (r *Registry) List() []Ref {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Ref(nil), r.refs...)
}

// WaitFor blocks until a version ≥ min is published and returns the newest
// published ref, or returns ctx's error.
func (r *Registry) WaitFor(ctx context.Context, min Version) (Ref, error) {
	for {
		r.mu.Lock()
		if n := len(r.refs); n > 0 && r.refs[n-1].Version >= min {
			ref := r.refs[n-1]
			r.mu.Unlock()
			return ref, nil
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Ref{}, fmt.Errorf("policy: wait for version %d: %w", min, context.Cause(ctx))
		}
	}
}
