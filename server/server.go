package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tandemrl/tandem/wire"
)

// Options are a Server's collaborators. Only Backend is required.
type Options struct {
	// Backend makes trainers and samplers.
	Backend Backend
	// Store finds checkpoints this server did not save (optional).
	Store CheckpointStore
	// Now is the clock; default time.Now. Tests pass a fake one.
	Now func() time.Time
	// OnStep, when set, is told each training call's final step-log entry
	// (applied, failed, rejected or timed_out), per model in log order, e.g.
	// to append it to a file that outlives the process. It is called with
	// the model's lock held: it must return quickly and not call the server.
	OnStep func(model string, e StepEntry)
}

// Server serves the Tinker API over a Backend. It is an http.Handler, safe
// for concurrent use. Close it to stop the calls still running.
type Server struct {
	cfg    Config
	be     Backend
	store  CheckpointStore
	now    func() time.Time
	onStep func(string, StepEntry)
	keys   keyring
	mux    *http.ServeMux

	ctx    context.Context // ends on Close; every call runs under it
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // every goroutine the server starts

	futures  *futureStore
	idem     *idemStore
	decoding chan struct{} // one token per body being read and decoded

	mu        sync.Mutex
	closed    bool
	sessions  map[string]*session
	models    map[string]*model
	sampling  map[string]*samplingSession
	samplers  map[string]*samplerEntry
	ckpts     map[string]ownedCheckpoint
	lastSweep time.Time
}

// ErrClosed is returned by calls on a closed server.
var ErrClosed = errors.New("server: closed")

// New validates cfg and returns a Server.
func New(cfg Config, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Backend == nil {
		return nil, fmt.Errorf("%w: no backend", ErrConfig)
	}
	cfg = cfg.withDefaults()
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Server{
		cfg: cfg, be: opts.Backend, store: opts.Store, now: now, onStep: opts.OnStep,
		keys: newKeyring(cfg.APIKeys), ctx: ctx, cancel: cancel,
		futures:  newFutureStore(now, cfg.FutureTTL, cfg.MaxInFlight, cfg.MaxResults),
		idem:     newIdemStore(now, cfg.FutureTTL, 100_000),
		decoding: make(chan struct{}, cfg.MaxDecoding),
		sessions: map[string]*session{}, models: map[string]*model{},
		sampling: map[string]*samplingSession{}, samplers: map[string]*samplerEntry{},
		ckpts: map[string]ownedCheckpoint{},
	}
	s.routes()
	return s, nil
}

// Config returns the server's configuration, defaults filled.
func (s *Server) Config() Config { return s.cfg }

// ServeHTTP answers one API call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close stops accepting calls, cancels the calls still running and waits
// for the server's goroutines, or for ctx.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, m := range s.models {
		m.stopTimers()
	}
	s.mu.Unlock()
	s.cancel(ErrClosed)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server: close: calls still running: %w", context.Cause(ctx))
	}
}

// smallBody bounds the bodies of polls and heartbeats.
const smallBody = 64 << 10

// handler is an endpoint: it returns the value answered with 200, or an error.
type handler func(ctx context.Context, owner string, body []byte) (any, error)

const api = "/api/v1/"

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET "+api+"healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, wire.HealthResponse{Status: "ok"})
	})
	post := func(name string, role Role, h handler) {
		m.Handle("POST "+api+name, s.endpoint(name, role, h))
	}
	get := func(pattern string, h http.HandlerFunc) {
		m.Handle("GET "+api+pattern, s.authed(h))
	}
	get("get_server_capabilities", s.capabilities)
	post("client/config", "", s.clientConfig)
	post("create_session", "", s.createSession)
	post("session_heartbeat", "", s.heartbeat)
	post("telemetry", "", func(context.Context, string, []byte) (any, error) {
		return wire.TelemetryResponse{Status: "accepted"}, nil
	})
	post("retrieve_future", "", s.retrieveFuture)
	post("create_model", RoleTrainer, s.createModel)
	post("get_info", RoleTrainer, s.getInfo)
	post("weights_info", "", s.weightsInfo)
	post("unload_model", RoleTrainer, s.unloadModel)
	post("forward", RoleTrainer, s.forward)
	post("forward_backward", RoleTrainer, s.forwardBackward)
	post("optim_step", RoleTrainer, s.optimStep)
	post("save_weights", RoleTrainer, s.saveWeights)
	post("save_weights_for_sampler", RoleTrainer, s.saveForSampler)
	post("load_weights", RoleTrainer, s.loadWeights)
	post("create_sampling_session", RoleSampler, s.createSamplingSession)
	post("asample", RoleSampler, s.asample)
	get("samplers/{id}", s.getSampler)
	get("sessions", s.listSessions)
	get("sessions/{id}", s.getSession)
	get("checkpoints", s.listUserCheckpoints)
	get("training_runs", s.listRuns)
	get("training_runs/{run}", s.getRun)
	get("training_runs/{run}/checkpoints", s.listCheckpoints)
	get("training_runs/{run}/step_log", s.stepLog)
	get("models/{run}/checkpoints", s.listCheckpoints)
	get("training_runs/{run}/checkpoints/{kind}/{name}/archive", s.archive)
	m.Handle("DELETE "+api+"training_runs/{run}/checkpoints/{kind}/{name}", s.authed(s.deleteCheckpoint))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, userErr(http.StatusNotFound, "no endpoint %s %s", r.Method, r.URL.Path))
	})
	s.mux = m
}

type ownerKey struct{}

// authed checks the API key and that the server is open.
func (s *Server) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, err := s.keys.owner(r)
		if err != nil {
			writeErr(w, err)
			return
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			writeErr(w, serverErr(http.StatusServiceUnavailable, "server is shutting down"))
			return
		}
		s.sweep()
		h(w, r.WithContext(context.WithValue(r.Context(), ownerKey{}, owner)))
	})
}

// headerKey holds the request's headers in an endpoint's context, for the
// few handlers a header changes (headerOf).
type headerKey struct{}

func headerOf(ctx context.Context) http.Header {
	h, _ := ctx.Value(headerKey{}).(http.Header)
	return h
}

func ownerOf(r *http.Request) string { v, _ := r.Context().Value(ownerKey{}).(string); return v }

// endpoint wraps a POST handler: key, role, bounded body, idempotency.
func (s *Server) endpoint(name string, role Role, h handler) http.Handler {
	return s.authed(func(w http.ResponseWriter, r *http.Request) {
		if role != "" && !s.cfg.serves(role) {
			writeErr(w, userErr(http.StatusNotFound, "%s is not served here: this server's role is %s", name, s.cfg.Role))
			return
		}
		small := name == "retrieve_future" || name == "session_heartbeat"
		limit := s.cfg.MaxBodyBytes
		if small {
			limit = min(limit, smallBody)
		} else {
			select {
			case s.decoding <- struct{}{}:
				defer func() { <-s.decoding }()
			case <-r.Context().Done():
				return
			}
		}
		body, err := readBody(r, limit, name == "forward_backward" || name == "forward")
		if err != nil {
			writeErr(w, err)
			return
		}
		owner := ownerOf(r)
		ctx := context.WithValue(r.Context(), headerKey{}, r.Header)
		key := r.Header.Get("X-Idempotency-Key")
		if key == "" || small {
			s.answer(w, ctx, owner, body, h)
			return
		}
		if len(key) > 256 {
			writeErr(w, userErr(http.StatusBadRequest, "X-Idempotency-Key is %d characters; at most 256 allowed", len(key)))
			return
		}
		ikey := owner + "\x00" + name + "\x00" + key
		// A header that changes what the call does counts as its body.
		sum := sha256.Sum256(append(append(slices.Clip(body), 0), r.Header.Get(minVersionHeader)...))
		e, first := s.idem.begin(ikey, sum)
		if !first {
			if e.bodySum != sum {
				writeErr(w, userErr(http.StatusUnprocessableEntity, "X-Idempotency-Key %q was used for a different %s body; use a new key for a new call", key, name))
				return
			}
			select {
			case <-e.done:
				w.Header().Set("X-Idempotent-Replay", "true")
				writeRaw(w, e.status, e.body)
			case <-r.Context().Done():
			}
			return
		}
		rec := &recorder{ResponseWriter: w}
		s.answer(rec, ctx, owner, body, h)
		s.idem.finish(ikey, e, rec.status, rec.body)
	})
}

// answer runs h and writes its value or error.
func (s *Server) answer(w http.ResponseWriter, ctx context.Context, owner string, body []byte, h handler) {
	v, err := h(ctx, owner, body)
	if err != nil {
		writeErr(w, err)
		return
	}
	if p, ok := v.(rawProto); ok {
		w.Header().Set("Content-Type", wire.ContentTypeProto)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(p)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// recorder keeps a copy of an answer for idempotent replays.
type recorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (r *recorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	return r.ResponseWriter.Write(b)
}

// go runs f as a goroutine the server owns (Close waits for it).
func (s *Server) goOwned(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// newFuture registers a future or answers 429 when too much is in flight.
func (s *Server) newFuture(owner, kind string) (*future, error) {
	f, err := s.futures.create(owner, kind)
	if errors.Is(err, errBusy) {
		return nil, userErr(http.StatusTooManyRequests, "%d calls in flight, the most this server takes; retry later", s.cfg.MaxInFlight)
	}
	return f, err
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	out := wire.GetServerCapabilitiesResponse{SupportedModels: []wire.SupportedModel{}}
	for _, m := range s.cfg.Models {
		out.SupportedModels = append(out.SupportedModels, wire.SupportedModel{ModelName: m.Name, MaxContextLength: m.MaxContextLength})
	}
	writeJSON(w, http.StatusOK, out)
}

// retrieveFuture answers a poll: the result when done, try_again after
// PollWait otherwise, 410 for an expired future, 404 for an unknown one.
func (s *Server) retrieveFuture(ctx context.Context, owner string, body []byte) (any, error) {
	req, err := wire.DecodeFutureRetrieveRequest(body)
	if err != nil {
		return nil, badRequest(err)
	}
	f, state := s.futures.get(owner, req.RequestID)
	switch state {
	case futureExpired:
		return nil, userErr(http.StatusGone, "request %q expired: results are kept %v after they finish", req.RequestID, s.cfg.FutureTTL)
	case futureUnknown:
		return nil, notFound("request", req.RequestID)
	}
	t := time.NewTimer(s.cfg.PollWait)
	defer t.Stop()
	select {
	case <-f.done:
		if acceptsProto(headerOf(ctx)) {
			if pb, ok, err := f.protoBody(); err != nil {
				return rawJSON(failedJSON(wire.ErrorCategoryServer, "encode result in protobuf: "+err.Error())), nil
			} else if ok {
				return rawProto(pb), nil
			}
		}
		return rawJSON(f.body), nil
	case <-t.C:
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
	return wire.TryAgainResponse{Type: wire.TypeTryAgain, RequestID: f.id, QueueState: wire.QueueActive}, nil
}

// rawProto is an answer already encoded in protobuf.
type rawProto []byte

// acceptsProto reports whether the client's Accept header takes protobuf
// (the SDK v0.25 sends Accept: application/x-protobuf when it polls).
func acceptsProto(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == wire.ContentTypeProto {
				return true
			}
		}
	}
	return false
}

// rawJSON is an already encoded answer.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
