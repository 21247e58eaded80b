package openai

import (
	"github.com/tandemrl/tandem/policy"
)

// adapter is one version registered on the server (or the base model,
// version 0, which is never unloaded).
type adapter struct {
	version policy.Version
	name    string // the model name requests carry
	path    string // the path the server was given; "" for the base
	base    bool
	refs    int  // Sample calls in flight on it
	doomed  bool // to be unloaded once refs drops to 0
	removed bool // handed out for unloading
}

// versionSet is the bookkeeping of loaded versions: which one new calls
// use, how many calls use each, and which to unload. It does no I/O and
// is not safe for concurrent use; Sampler guards it with a mutex and does
// the unloads it returns.
//
// Rules: the newest loaded version is current; at most max versions
// that are not doomed stay registered; when a load makes more, the oldest
// are doomed in order of age. A doomed version with no call in flight is
// returned for unloading at once; one still used is returned when its
// last call releases it. The base model is never doomed.
type versionSet struct {
	max     int
	base    *adapter
	loaded  []*adapter // registered versions, oldest first
	current *adapter
}

func newVersionSet(baseName string, max int) *versionSet {
	b := &adapter{version: 0, name: baseName, base: true}
	return &versionSet{max: max, base: b, current: b}
}

// acquire returns the adapter new calls use and counts the caller in.
func (s *versionSet) acquire() *adapter {
	s.current.refs++
	return s.current
}

// release counts the caller of a out and returns the adapters to unload.
func (s *versionSet) release(a *adapter) []*adapter {
	a.refs--
	if a.refs < 0 {
		panic("openai: adapter released more often than acquired")
	}
	return s.sweep()
}

// lookup returns the registered adapter of v, if any (doomed ones
// included: they are still on the server).
func (s *versionSet) lookup(v policy.Version) (*adapter, bool) {
	for _, a := range s.loaded {
		if a.version == v && !a.removed {
			return a, true
		}
	}
	return nil, false
}

// currentVersion is the version new calls use.
func (s *versionSet) currentVersion() policy.Version { return s.current.version }

// add records a newly registered version, makes it current, and returns
// the adapters to unload. The caller checks that v is newer than current.
func (s *versionSet) add(v policy.Version, name, path string) []*adapter {
	a := &adapter{version: v, name: name, path: path}
	s.loaded = append(s.loaded, a)
	s.current = a
	live := 0
	for _, x := range s.loaded {
		if !x.doomed {
			live++
		}
	}
	for _, x := range s.loaded {
		if live <= s.max {
			break
		}
		if !x.doomed && x != s.current {
			x.doomed = true
			live--
		}
	}
	return s.sweep()
}

// sweep hands out doomed adapters no call uses and drops them.
func (s *versionSet) sweep() []*adapter {
	var out []*adapter
	kept := s.loaded[:0]
	for _, x := range s.loaded {
		if x.doomed && x.refs == 0 {
			x.removed = true
			out = append(out, x)
			continue
		}
		kept = append(kept, x)
	}
	for i := len(kept); i < len(s.loaded); i++ {
		s.loaded[i] = nil
	}
	s.loaded = kept
	return out
}

// registered returns the versions registered on the server, oldest first.
func (s *versionSet) registered() []policy.Version {
	out := make([]policy.Version, len(s.loaded))
	for i, a := range s.loaded {
		out[i] = a.version
	}
	return out
}
