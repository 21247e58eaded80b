package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/tandemrl/tandem/wire"
)

// errBusy reports that MaxInFlight futures are unfinished.
var errBusy = errors.New("server: too many calls in flight; retry later")

// future is the server side of a call answered with {request_id}: done is
// closed when body (the JSON result, or a RequestFailedResponse) is set.
type future struct {
	id    string
	owner string
	kind  string
	done  chan struct{}
	body  []byte
	// protoSrc is the result, for the types the SDK v0.25 reads only in
	// protobuf (sample, forward, forward_backward); nil for the others and
	// for errors, which stay JSON. It is encoded on the first poll that
	// asks for protobuf (JSON-only clients never pay for it), once.
	protoSrc  interface{ MarshalProto() ([]byte, error) }
	protoOnce sync.Once
	proto     []byte
	protoErr  error
	ended     time.Time // when done; zero while running
}

// futureStore holds futures by id and bounds the unfinished ones. Finished
// futures are forgotten FutureTTL after they end; their ids are kept a while
// longer so that a late poll is answered 410 (expired) rather than 404.
type futureStore struct {
	mu       sync.Mutex
	now      func() time.Time
	ttl      time.Duration
	max      int
	running  int
	byID     map[string]*future
	finished []*future            // in the order they ended, to bound how many results are kept
	keep     int                  // most finished results kept; older ones expire early
	expired  map[string]time.Time // id → when it may be forgotten entirely
	lastScan time.Time
}

func newFutureStore(now func() time.Time, ttl time.Duration, max, keep int) *futureStore {
	return &futureStore{now: now, ttl: ttl, max: max, keep: keep, byID: map[string]*future{}, expired: map[string]time.Time{}}
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// create registers a running future, or returns errBusy.
func (s *futureStore) create(owner, kind string) (*future, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	if s.running >= s.max {
		return nil, errBusy
	}
	f := &future{id: newID("req-"), owner: owner, kind: kind, done: make(chan struct{})}
	s.byID[f.id] = f
	s.running++
	return f, nil
}

// complete sets f's result once; later calls are ignored.
func (s *futureStore) complete(f *future, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !f.ended.IsZero() {
		return
	}
	f.body = body
	f.ended = s.now()
	s.running--
	close(f.done)
	s.finished = append(s.finished, f)
	for len(s.finished) > s.keep {
		old := s.finished[0]
		s.finished = s.finished[1:]
		if s.byID[old.id] == old {
			delete(s.byID, old.id)
			s.expired[old.id] = f.ended.Add(s.ttl)
		}
	}
}

func (s *futureStore) succeed(f *future, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.fail(f, wire.ErrorCategoryServer, "encode result: "+err.Error())
		return
	}
	if p, ok := v.(interface{ MarshalProto() ([]byte, error) }); ok {
		f.protoSrc = p // written before complete closes done, read after
	}
	s.complete(f, b)
}

// protoBody is f's result in protobuf, encoded on first use; ok is false
// when the result has no protobuf form.
func (f *future) protoBody() (b []byte, ok bool, err error) {
	if f.protoSrc == nil {
		return nil, false, nil
	}
	f.protoOnce.Do(func() { f.proto, f.protoErr = f.protoSrc.MarshalProto() })
	return f.proto, true, f.protoErr
}

func (s *futureStore) fail(f *future, category, msg string) {
	s.complete(f, failedJSON(category, msg))
}

// failedJSON is a future's answer for a call that failed.
func failedJSON(category, msg string) []byte {
	b, _ := json.Marshal(wire.RequestFailedResponse{Error: msg, Category: category})
	return b
}

// discard forgets a running future that was never handed out.
func (s *futureStore) discard(f *future) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.ended.IsZero() {
		delete(s.byID, f.id)
		f.ended = s.now()
		s.running--
	}
}

// lookup states of get.
const (
	futureFound = iota
	futureUnknown
	futureExpired
)

// get returns owner's future id. Another owner's future is unknown.
func (s *futureStore) get(owner, id string) (*future, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
	if f, ok := s.byID[id]; ok && f.owner == owner {
		return f, futureFound
	}
	if _, ok := s.expired[id]; ok {
		return nil, futureExpired
	}
	return nil, futureUnknown
}

func (s *futureStore) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// sweepLocked expires finished futures past their TTL, at most once a second.
func (s *futureStore) sweepLocked() {
	now := s.now()
	if now.Sub(s.lastScan) < time.Second {
		return
	}
	s.lastScan = now
	n := 0
	for _, f := range s.finished {
		if now.Sub(f.ended) <= s.ttl {
			break
		}
		if s.byID[f.id] == f {
			delete(s.byID, f.id)
			s.expired[f.id] = now.Add(s.ttl)
		}
		n++
	}
	s.finished = s.finished[n:]
	for id, until := range s.expired {
		if now.After(until) {
			delete(s.expired, id)
		}
	}
}
