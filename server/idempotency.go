package server

import (
	"sync"
	"time"
)

// idemStore remembers the answer to each (tenant, endpoint,
// X-Idempotency-Key) so that a retried call gets the first answer — the
// same future — instead of being applied again. A retry that arrives while
// the first call is still being answered waits for that answer.
type idemStore struct {
	mu      sync.Mutex
	now     func() time.Time
	ttl     time.Duration
	max     int
	entries map[string]*idemEntry
	order   []string // keys, oldest first
}

type idemEntry struct {
	bodySum [32]byte // sha256 of the request body: a key reused for another body is refused
	done    chan struct{}
	status  int
	body    []byte
	at      time.Time
}

func newIdemStore(now func() time.Time, ttl time.Duration, max int) *idemStore {
	return &idemStore{now: now, ttl: ttl, max: max, entries: map[string]*idemEntry{}}
}

// begin returns the entry for key and whether the caller owns it (is the
// first): the owner must call finish; others wait on done and replay.
func (s *idemStore) begin(key string, bodySum [32]byte) (*idemEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for len(s.order) > 0 {
		old := s.entries[s.order[0]]
		expired := old == nil || now.Sub(old.at) >= s.ttl
		if !expired && len(s.order) <= s.max {
			break
		}
		if old != nil {
			delete(s.entries, s.order[0])
		}
		s.order = s.order[1:]
	}
	if e, ok := s.entries[key]; ok {
		return e, false
	}
	e := &idemEntry{bodySum: bodySum, done: make(chan struct{}), at: now}
	s.entries[key] = e
	s.order = append(s.order, key)
	return e, true
}

// finish records the answer. A 5xx or 429 answer is forgotten instead, so
// that the retry it invites is really tried again.
func (s *idemStore) finish(key string, e *idemEntry, status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.status, e.body = status, body
	if status >= 500 || status == 429 {
		if s.entries[key] == e {
			delete(s.entries, key)
		}
	}
	close(e.done)
}
