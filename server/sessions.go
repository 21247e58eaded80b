package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tandemrl/tandem/wire"
)

// session is a client's session: it lives while heartbeats (or calls) come,
// and owns the models and sampling sessions created in it.
type session struct {
	id       string
	owner    string
	lastSeen time.Time
	models   map[int64]string // model_seq_id → create_model request id (duplicates answer it)
	sampling map[int64]string // sampling_session_seq_id → sampling session id
}

func (s *Server) createSession(_ context.Context, owner string, body []byte) (any, error) {
	if _, err := wire.DecodeCreateSessionRequest(body); err != nil {
		return nil, badRequest(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		if ss.owner == owner {
			n++
		}
	}
	if n >= s.cfg.MaxSessions {
		return nil, userErr(http.StatusTooManyRequests, "%d live sessions, the most one key may hold; let old ones expire", n)
	}
	ss := &session{id: newID("sess-"), owner: owner, lastSeen: s.now(), models: map[int64]string{}, sampling: map[int64]string{}}
	s.sessions[ss.id] = ss
	return wire.CreateSessionResponse{Type: "create_session", SessionID: ss.id}, nil
}

func (s *Server) heartbeat(_ context.Context, owner string, body []byte) (any, error) {
	req, err := wire.DecodeSessionHeartbeatRequest(body)
	if err != nil {
		return nil, badRequest(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.sessionLocked(owner, req.SessionID)
	if err != nil {
		return nil, err
	}
	ss.lastSeen = s.now()
	return wire.SessionHeartbeatResponse{Type: "session_heartbeat"}, nil
}

// sessionLocked finds owner's live session id; s.mu is held.
func (s *Server) sessionLocked(owner, id string) (*session, error) {
	ss, ok := s.sessions[id]
	if !ok || ss.owner != owner {
		return nil, notFound("session", id)
	}
	return ss, nil
}

// touchLocked marks session id alive; s.mu is held.
func (s *Server) touchLocked(id string) {
	if ss, ok := s.sessions[id]; ok {
		ss.lastSeen = s.now()
	}
}

// sweep ends sessions that missed heartbeats for SessionTTL, with their
// models and sampling sessions. It runs at most once a second.
func (s *Server) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.lastSweep) < time.Second {
		return
	}
	s.lastSweep = now
	for id, ss := range s.sessions {
		if now.Sub(ss.lastSeen) <= s.cfg.SessionTTL {
			continue
		}
		delete(s.sessions, id)
		for mid, m := range s.models {
			if m.session == id {
				s.dropModelLocked(mid, m)
			}
		}
		for sid, sp := range s.sampling {
			if sp.session == id {
				delete(s.sampling, sid)
			}
		}
	}
}

// dropModelLocked forgets model m; its trainer is closed (if it can be)
// once the calls already applied have finished. s.mu is held.
func (s *Server) dropModelLocked(id string, m *model) {
	delete(s.models, id)
	m.mu.Lock()
	m.stopTimersLocked()
	for n, op := range m.seq.parked {
		delete(m.seq.parked, n)
		s.futures.fail(op.fut, wire.ErrorCategoryUser, fmt.Sprintf("model %s was unloaded (or its session expired) while seq_id %d waited for seq_id %d", id, n, m.seq.next))
	}
	tail := m.tail
	m.mu.Unlock()
	if c, ok := m.trainer.(io.Closer); ok {
		s.goOwned(func() {
			select {
			case <-tail:
			case <-s.ctx.Done():
			}
			_ = c.Close()
		})
	}
}
