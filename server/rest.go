package server

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/tandemrl/tandem/wire"
)

// The REST listing: training runs are this server's live models; their
// checkpoints are the saves this server recorded plus what the
// CheckpointStore lists.

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	owner := ownerOf(r)
	limit, offset, err := page(r, 20)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.mu.Lock()
	var ms []*model
	for _, m := range s.models {
		if m.owner == owner {
			ms = append(ms, m)
		}
	}
	s.mu.Unlock()
	sort.Slice(ms, func(i, j int) bool {
		return ms[i].created.Before(ms[j].created) || (ms[i].created.Equal(ms[j].created) && ms[i].id < ms[j].id)
	})
	out := wire.TrainingRunsResponse{TrainingRuns: []wire.TrainingRun{}, Cursor: wire.Cursor{Offset: offset, Limit: limit, TotalCount: len(ms)}}
	for _, m := range pageOf(ms, offset, limit) {
		out.TrainingRuns = append(out.TrainingRuns, s.runOf(m))
	}
	writeJSON(w, http.StatusOK, out)
}

func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, userErr(http.StatusBadRequest, "query %s=%q: want an integer from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

func (s *Server) runOf(m *model) wire.TrainingRun {
	m.mu.Lock()
	last := m.lastReq
	m.mu.Unlock()
	rank := m.lora.Rank
	run := wire.TrainingRun{
		TrainingRunID: m.id, BaseModel: m.base, ModelOwner: m.owner, IsLora: true,
		LoraRank: &rank, LastRequestTime: last.UTC(),
	}
	for k, v := range m.meta {
		if sv, ok := v.(string); ok {
			if run.UserMetadata == nil {
				run.UserMetadata = map[string]string{}
			}
			run.UserMetadata[k] = sv
		}
	}
	for _, ck := range s.ownCheckpoints(m.owner, m.id) {
		c := wire.CheckpointFromPath(ck.Path, ck.Created, ck.Expires)
		if ck.Path.Kind == wire.KindWeights {
			run.LastCheckpoint = &c
		} else {
			run.LastSamplerCheckpoint = &c
		}
	}
	return run
}

// ownCheckpoints lists the saves this server recorded for run (every run
// of owner's when run is ""), oldest first.
func (s *Server) ownCheckpoints(owner, run string) []Checkpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Checkpoint
	now := s.now()
	for _, oc := range s.ckpts {
		if oc.owner == owner && (run == "" || oc.Path.Run == run) && !oc.expired(now) {
			out = append(out, oc.Checkpoint)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Path.String() < out[j].Path.String()
	})
	return out
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	m, err := s.modelFor(ownerOf(r), r.PathValue("run"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.runOf(m))
}

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) {
	owner, run := ownerOf(r), r.PathValue("run")
	if err := wire.ValidName(run); err != nil {
		writeErr(w, userErr(http.StatusBadRequest, "training run id: %v", err))
		return
	}
	cks := s.ownCheckpoints(owner, run)
	// The store's copies of this server's saves, expired ones included
	// (stores keep no expiry), are not listed again.
	seen := map[string]bool{}
	s.mu.Lock()
	for k, oc := range s.ckpts {
		if oc.owner == owner && oc.Path.Run == run {
			seen[k] = true
		}
	}
	s.mu.Unlock()
	if s.store != nil {
		more, err := s.store.List(r.Context(), owner, run)
		if err != nil {
			writeErr(w, serverErr(http.StatusBadGateway, "list checkpoints of %s: %v", run, err))
			return
		}
		for _, ck := range more {
			if !seen[ck.Path.String()] {
				cks = append(cks, ck)
			}
		}
	}
	s.mu.Lock()
	m, live := s.models[run]
	s.mu.Unlock()
	if len(cks) == 0 && (!live || m.owner != owner) {
		writeErr(w, notFound("training run", run))
		return
	}
	out := wire.CheckpointsListResponse{Checkpoints: []wire.Checkpoint{}}
	for _, ck := range cks {
		out.Checkpoints = append(out.Checkpoints, wire.CheckpointFromPath(ck.Path, ck.Created, ck.Expires))
	}
	writeJSON(w, http.StatusOK, out)
}

// checkpointOf resolves the checkpoint a REST path names
// (…/checkpoints/{kind}/{name} of run {run}) for the caller's key; when it
// cannot, it has answered the request and reports false.
func (s *Server) checkpointOf(w http.ResponseWriter, r *http.Request) (string, wire.TinkerPath, bool) {
	owner := ownerOf(r)
	p, err := wire.ParseTinkerPath(wire.TinkerScheme + r.PathValue("run") + "/" + r.PathValue("kind") + "/" + r.PathValue("name"))
	if err != nil {
		writeErr(w, badRequest(err))
		return "", p, false
	}
	if _, err := s.resolve(r.Context(), owner, p); err != nil {
		writeErr(w, err)
		return "", p, false
	}
	return owner, p, true
}

// deleteCheckpoint forgets a checkpoint (and deletes it from the store when
// the store can); samplers already serving it keep their copy.
func (s *Server) deleteCheckpoint(w http.ResponseWriter, r *http.Request) {
	owner, p, ok := s.checkpointOf(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	if oc, ok := s.ckpts[p.String()]; ok && oc.owner == owner {
		delete(s.ckpts, p.String())
	}
	s.mu.Unlock()
	if d, ok := s.store.(CheckpointDeleter); ok {
		if err := d.Delete(r.Context(), owner, p); err != nil {
			writeErr(w, serverErr(http.StatusBadGateway, "delete %s from the checkpoint store: %v", p, err))
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// archive answers 302 to a download URL, as the SDK expects
// (resources/weights.py get_checkpoint_archive_url).
func (s *Server) archive(w http.ResponseWriter, r *http.Request) {
	owner, p, ok := s.checkpointOf(w, r)
	if !ok {
		return
	}
	linker, ok := s.store.(ArchiveLinker)
	if !ok {
		writeErr(w, userErr(http.StatusNotFound, "checkpoint %s exists but archive download is not available: this server has no checkpoint store", p))
		return
	}
	url, expires, err := linker.ArchiveURL(r.Context(), owner, p)
	if err != nil {
		writeErr(w, serverErr(http.StatusBadGateway, "archive URL of %s: %v", p, err))
		return
	}
	w.Header().Set("Location", url)
	w.Header().Set("Expires", expires.UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusFound)
}

// StepLogResponse answers GET training_runs/{id}/step_log, a tandem
// extension: the model's step log, for tests and audits across processes.
type StepLogResponse struct {
	Steps []StepEntry `json:"steps"`
}

func (s *Server) stepLog(w http.ResponseWriter, r *http.Request) {
	m, err := s.modelFor(ownerOf(r), r.PathValue("run"))
	if err != nil {
		writeErr(w, err)
		return
	}
	m.mu.Lock()
	out := StepLogResponse{Steps: append([]StepEntry{}, m.log...)}
	m.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// page reads limit (default def) and offset from the query.
func page(r *http.Request, def int) (limit, offset int, err error) {
	if limit, err = queryInt(r, "limit", def, 1, 1000); err != nil {
		return 0, 0, err
	}
	offset, err = queryInt(r, "offset", 0, 0, 1<<31)
	return limit, offset, err
}

// pageOf is the page of xs that offset and limit select.
func pageOf[T any](xs []T, offset, limit int) []T {
	if offset >= len(xs) {
		return nil
	}
	return xs[offset:min(len(xs), offset+limit)]
}

// listUserCheckpoints answers GET checkpoints: every checkpoint this
// server saved for the key, oldest first, a page at a time.
func (s *Server) listUserCheckpoints(w http.ResponseWriter, r *http.Request) {
	owner := ownerOf(r)
	limit, offset, err := page(r, 100)
	if err != nil {
		writeErr(w, err)
		return
	}
	cks := s.ownCheckpoints(owner, "")
	out := wire.CheckpointsListResponse{Checkpoints: []wire.Checkpoint{}, Cursor: &wire.Cursor{Offset: offset, Limit: limit, TotalCount: len(cks)}}
	for _, ck := range pageOf(cks, offset, limit) {
		out.Checkpoints = append(out.Checkpoints, wire.CheckpointFromPath(ck.Path, ck.Created, ck.Expires))
	}
	writeJSON(w, http.StatusOK, out)
}

// listSessions answers GET sessions: the key's live sessions, by id, a
// page at a time.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	owner := ownerOf(r)
	limit, offset, err := page(r, 20)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.mu.Lock()
	var ids []string
	for id, ss := range s.sessions {
		if ss.owner == owner {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	sort.Strings(ids)
	out := wire.ListSessionsResponse{Sessions: append([]string{}, pageOf(ids, offset, limit)...)}
	writeJSON(w, http.StatusOK, out)
}

// getSession answers GET sessions/{id}: the models and sampling sessions
// made in a live session of the key.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	owner, id := ownerOf(r), r.PathValue("id")
	s.mu.Lock()
	ss, ok := s.sessions[id]
	if !ok || ss.owner != owner {
		s.mu.Unlock()
		writeErr(w, notFound("session", id))
		return
	}
	out := wire.GetSessionResponse{TrainingRunIDs: []string{}, SamplerIDs: []string{}}
	for _, m := range s.models {
		if m.session == id && m.owner == owner {
			out.TrainingRunIDs = append(out.TrainingRunIDs, m.id)
		}
	}
	for _, sid := range ss.sampling {
		out.SamplerIDs = append(out.SamplerIDs, sid)
	}
	s.mu.Unlock()
	sort.Strings(out.TrainingRunIDs)
	sort.Strings(out.SamplerIDs)
	writeJSON(w, http.StatusOK, out)
}
