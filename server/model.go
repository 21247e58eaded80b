package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// StepEntry is one training call in a model's step log, in application
// order. Version is the policy version after the call.
type StepEntry struct {
	Seq       int64          `json:"seq_id"` // -1 for a call without seq_id
	Kind      string         `json:"kind"`   // forward, forward_backward, optim_step, save_weights, …
	RequestID string         `json:"request_id"`
	Status    string         `json:"status"` // running, applied, failed, rejected, timed_out
	Version   policy.Version `json:"version"`
	Error     string         `json:"error,omitempty"`
}

// Step statuses.
const (
	StepRunning  = "running"
	StepApplied  = "applied"
	StepFailed   = "failed"
	StepRejected = "rejected"  // the body was bad: the seq_id is used up, nothing applied
	StepTimedOut = "timed_out" // waited too long for an earlier seq_id
)

// model is one create_model: a trainer and the order of its calls.
type model struct {
	id, owner, session, base string
	lora                     wire.LoraConfig
	meta                     map[string]any
	created                  time.Time
	trainer                  rl.Trainer

	mu      sync.Mutex
	seq     *sequencer[*trainOp]
	version policy.Version
	lastReq time.Time
	log     []StepEntry
	saves   []Checkpoint
	tail    chan struct{} // closed when the last released call is recorded
	timers  map[int64]*time.Timer
}

// outcome is what a finished call reports.
type outcome struct {
	result  any
	version *policy.Version // set when the call changes the version
	err     error
}

// trainOp is a training call waiting for its turn. start submits it to the
// trainer (under m.mu, in seq order) and returns a function that waits for
// the result.
type trainOp struct {
	kind     string
	seq      *int64
	fut      *future
	start    func(ctx context.Context) func(ctx context.Context) outcome
	rejected error // set for a call whose body was bad: it only uses up its seq_id
}

// StepLog returns a copy of model id's step log, or nil if unknown.
func (s *Server) StepLog(id string) []StepEntry {
	s.mu.Lock()
	m, ok := s.models[id]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]StepEntry(nil), m.log...)
}

// modelFor finds owner's model id and marks its session alive.
func (s *Server) modelFor(owner, id string) (*model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.models[id]
	if !ok || m.owner != owner {
		return nil, notFound("model", id)
	}
	s.touchLocked(m.session)
	return m, nil
}

func (s *Server) modelSpec(base string) (ModelSpec, error) {
	if len(s.cfg.Models) == 0 {
		return ModelSpec{Name: base}, nil
	}
	names := make([]string, len(s.cfg.Models))
	for i, m := range s.cfg.Models {
		if m.Name == base {
			return m, nil
		}
		names[i] = m.Name
	}
	return ModelSpec{}, userErr(http.StatusBadRequest, "field base_model: %q is not served here; want one of %v", base, names)
}

// checkTokens checks token ids against the base model's vocabulary.
func checkTokens(spec ModelSpec, field string, toks []int) error {
	if spec.VocabSize == 0 {
		return nil
	}
	for i, t := range toks {
		if t >= spec.VocabSize {
			e := userErr(http.StatusBadRequest, "field %s[%d]: token id %d out of range; model %s has %d tokens", field, i, t, spec.Name, spec.VocabSize)
			e.body.Field = field
			return e
		}
	}
	return nil
}

func (s *Server) createModel(ctx context.Context, owner string, body []byte) (any, error) {
	req, err := wire.DecodeCreateModelRequest(body)
	if err != nil {
		return nil, badRequest(err)
	}
	if _, err := s.modelSpec(req.BaseModel); err != nil {
		return nil, err
	}
	s.mu.Lock()
	ss, err := s.sessionLocked(owner, req.SessionID)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	ss.lastSeen = s.now()
	if prev, ok := ss.models[req.ModelSeqID]; ok {
		s.mu.Unlock()
		return wire.UntypedAPIFuture{RequestID: prev}, nil
	}
	n := 0
	for _, m := range s.models {
		if m.owner == owner {
			n++
		}
	}
	if n >= s.cfg.MaxModels {
		s.mu.Unlock()
		return nil, userErr(http.StatusTooManyRequests, "%d live models, the most one key may hold; unload one first", n)
	}
	f, err := s.newFuture(owner, "create_model")
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	ss.models[req.ModelSeqID] = f.id
	s.mu.Unlock()

	id := newID("model-")
	s.goOwned(func() {
		tr, err := s.be.NewTrainer(s.ctx, TrainerSpec{Run: id, Base: req.BaseModel, Lora: req.LoraConfig})
		if err != nil {
			s.futures.fail(f, wire.ErrorCategoryUnknown, fmt.Sprintf("create model: %v", err))
			return
		}
		m := &model{
			id: id, owner: owner, session: req.SessionID, base: req.BaseModel, lora: req.LoraConfig,
			meta: req.UserMetadata, created: s.now(), trainer: tr, seq: newSequencer[*trainOp](),
			tail: closedChan(), timers: map[int64]*time.Timer{}, lastReq: s.now(),
		}
		s.mu.Lock()
		if _, live := s.sessions[req.SessionID]; !live || s.closed {
			s.mu.Unlock()
			s.futures.fail(f, wire.ErrorCategoryUser, "create model: session ended before the model was ready")
			return
		}
		s.models[id] = m
		s.mu.Unlock()
		s.futures.succeed(f, wire.CreateModelResponse{ModelID: id, Type: "create_model"})
	})
	return wire.UntypedAPIFuture{RequestID: f.id}, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (s *Server) getInfo(_ context.Context, owner string, body []byte) (any, error) {
	req, err := wire.DecodeModelRequest(body, "get_info")
	if err != nil {
		return nil, badRequest(err)
	}
	m, err := s.modelFor(owner, req.ModelID)
	if err != nil {
		return nil, err
	}
	tok := m.base
	if spec, err := s.modelSpec(m.base); err == nil && spec.TokenizerID != "" {
		tok = spec.TokenizerID
	}
	return wire.GetInfoResponse{
		Type: "get_info", ModelID: m.id, IsLora: true, LoraRank: m.lora.Rank, ModelName: m.base,
		ModelData: wire.ModelData{ModelName: m.base, TokenizerID: tok},
	}, nil
}

func (s *Server) unloadModel(_ context.Context, owner string, body []byte) (any, error) {
	req, err := wire.DecodeModelRequest(body, "unload_model")
	if err != nil {
		return nil, badRequest(err)
	}
	m, err := s.modelFor(owner, req.ModelID)
	if err != nil {
		return nil, err
	}
	f, err := s.newFuture(owner, "unload_model")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.dropModelLocked(m.id, m)
	s.mu.Unlock()
	s.futures.succeed(f, wire.UnloadModelResponse{ModelID: m.id, Type: "unload_model"})
	return wire.UntypedAPIFuture{RequestID: f.id, ModelID: m.id}, nil
}

// submit puts op in m's order: applied now (with every parked call that
// follows), parked until its turn, or — for a seq_id seen before — answered
// with the first call's future.
func (s *Server) submit(m *model, op *trainOp) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastReq = s.now()
	res := m.seq.submit(op.seq, op.fut.id, op)
	switch {
	case res.dupOf != "":
		s.futures.discard(op.fut)
		return wire.UntypedAPIFuture{RequestID: res.dupOf, ModelID: m.id}, nil
	case res.stale:
		s.futures.discard(op.fut)
		return nil, userErr(http.StatusConflict, "field seq_id: %d was applied long ago (next expected is %d)", *op.seq, m.seq.next)
	case res.parked:
		n := *op.seq
		m.timers[n] = time.AfterFunc(s.cfg.SeqWait, func() { s.expireParked(m, n, op) })
	}
	for _, r := range res.release {
		s.startLocked(m, r)
	}
	return wire.UntypedAPIFuture{RequestID: op.fut.id, ModelID: m.id}, nil
}

// expireParked fails a call whose earlier seq_ids did not come in time.
func (s *Server) expireParked(m *model, n int64, op *trainOp) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.timers, n)
	if !m.seq.drop(n) {
		return
	}
	msg := m.seq.waitingFor(n) + fmt.Sprintf(" within %v", s.cfg.SeqWait)
	s.logStepLocked(m, StepEntry{Seq: n, Kind: op.kind, RequestID: op.fut.id, Status: StepTimedOut, Version: m.version, Error: msg})
	s.futures.fail(op.fut, wire.ErrorCategoryUser, msg) // no-op for a rejected call, already failed
}

// startLocked submits op to the trainer and starts the goroutine that
// records its outcome. Outcomes are recorded in application order. m.mu is held.
func (s *Server) startLocked(m *model, op *trainOp) {
	if op.seq != nil {
		if t, ok := m.timers[*op.seq]; ok {
			t.Stop()
			delete(m.timers, *op.seq)
		}
	}
	seq := int64(-1)
	if op.seq != nil {
		seq = *op.seq
	}
	if op.rejected != nil {
		s.logStepLocked(m, StepEntry{Seq: seq, Kind: op.kind, RequestID: op.fut.id, Status: StepRejected, Version: m.version, Error: op.rejected.Error()})
		return
	}
	idx := len(m.log)
	m.log = append(m.log, StepEntry{Seq: seq, Kind: op.kind, RequestID: op.fut.id, Status: StepRunning, Version: m.version})
	wait := op.start(s.ctx)
	prev, mine := m.tail, make(chan struct{})
	m.tail = mine
	s.goOwned(func() {
		defer close(mine)
		out := wait(s.ctx)
		select {
		case <-prev:
		case <-s.ctx.Done():
		}
		m.mu.Lock()
		e := &m.log[idx]
		if out.version != nil {
			m.version = *out.version
		}
		e.Version = m.version
		if out.err != nil {
			e.Status, e.Error = StepFailed, out.err.Error()
		} else {
			e.Status = StepApplied
		}
		if s.onStep != nil {
			s.onStep(m.id, *e)
		}
		m.mu.Unlock()
		if out.err != nil {
			s.futures.fail(op.fut, wire.ErrorCategoryUnknown, fmt.Sprintf("%s: %v", op.kind, out.err))
			return
		}
		s.futures.succeed(op.fut, out.result)
	})
}

// reject uses up the seq_id of a call whose body was bad, so that the calls
// after it are not held up waiting for it. A retry of that seq_id is
// answered with a future holding the error. When too much is in flight the
// seq_id is left free, as the client will retry.
func (s *Server) reject(m *model, owner, kind string, seq int64, cause error) {
	f, err := s.futures.create(owner, kind)
	if err != nil {
		return
	}
	s.futures.fail(f, wire.ErrorCategoryUser, cause.Error())
	_, _ = s.submit(m, &trainOp{kind: kind, seq: &seq, fut: f, rejected: cause})
}

// logStepLocked appends a finished entry and tells the observer. m.mu is held.
func (s *Server) logStepLocked(m *model, e StepEntry) {
	m.log = append(m.log, e)
	if s.onStep != nil {
		s.onStep(m.id, e)
	}
}

func (m *model) stopTimers() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopTimersLocked()
}

func (m *model) stopTimersLocked() {
	for n, t := range m.timers {
		t.Stop()
		delete(m.timers, n)
	}
}
