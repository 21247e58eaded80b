package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// samplerTarget is what a sampler serves: a saved adapter (ref set) or the
// base model (ref nil). Key names it in the sampler cache.
type samplerTarget struct {
	key  string
	base string
	ref  *policy.Ref
}

func targetOf(ck Checkpoint) samplerTarget {
	ref := ck.Ref
	return samplerTarget{key: ck.Path.String(), base: ck.Base, ref: &ref}
}

func baseTarget(base string) samplerTarget { return samplerTarget{key: "base:" + base, base: base} }

// samplingSession binds a sampling_session_id to a target.
type samplingSession struct {
	id, owner, session string
	target             samplerTarget
	seqs               map[int64]string // seq_id → request id, for duplicates
	order              []int64
}

// samplerEntry is a cached sampler; ready is closed once sampler or err is set.
type samplerEntry struct {
	ready   chan struct{}
	sampler rl.Sampler
	err     error
	used    time.Time
}

func (s *Server) createSamplingSession(ctx context.Context, owner string, body []byte) (any, error) {
	req, err := wire.DecodeCreateSamplingSessionRequest(body)
	if err != nil {
		return nil, badRequest(err)
	}
	s.mu.Lock()
	ss, err := s.sessionLocked(owner, req.SessionID)
	if err == nil {
		ss.lastSeen = s.now()
		if prev, ok := ss.sampling[req.SamplingSessionSeqID]; ok {
			s.mu.Unlock()
			return wire.CreateSamplingSessionResponse{Type: "create_sampling_session", SamplingSessionID: prev}, nil
		}
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	t, err := s.target(ctx, owner, req.ModelPath, req.BaseModel)
	if err != nil {
		return nil, err
	}
	sp := s.openSamplingSession(owner, req.SessionID, t)
	s.mu.Lock()
	if ss, ok := s.sessions[req.SessionID]; ok {
		ss.sampling[req.SamplingSessionSeqID] = sp.id
	}
	s.mu.Unlock()
	return wire.CreateSamplingSessionResponse{Type: "create_sampling_session", SamplingSessionID: sp.id}, nil
}

func (s *Server) openSamplingSession(owner, session string, t samplerTarget) *samplingSession {
	sp := &samplingSession{id: newID("samp-"), owner: owner, session: session, target: t, seqs: map[int64]string{}}
	s.mu.Lock()
	s.sampling[sp.id] = sp
	s.mu.Unlock()
	return sp
}

// target resolves a model_path (a sampler checkpoint of owner's) or a base model.
func (s *Server) target(ctx context.Context, owner, modelPath, base string) (samplerTarget, error) {
	if modelPath == "" {
		if _, err := s.modelSpec(base); err != nil {
			return samplerTarget{}, err
		}
		return baseTarget(base), nil
	}
	p, err := wire.ParseTinkerPath(modelPath)
	if err != nil {
		return samplerTarget{}, badRequest(err)
	}
	ck, err := s.resolve(ctx, owner, p)
	if err != nil {
		return samplerTarget{}, err
	}
	return targetOf(ck), nil
}

func (s *Server) asample(ctx context.Context, owner string, body []byte) (any, error) {
	req, err := wire.DecodeSampleRequest(body)
	if err != nil {
		return nil, badRequest(err)
	}
	if err := minVersionFromHeader(ctx, &req); err != nil {
		return nil, err
	}
	var t samplerTarget
	var sp *samplingSession
	if req.SamplingSessionID != "" {
		s.mu.Lock()
		sp = s.sampling[req.SamplingSessionID]
		if sp != nil && sp.owner == owner {
			s.touchLocked(sp.session)
			if req.SeqID != nil {
				if prev, ok := sp.seqs[*req.SeqID]; ok {
					s.mu.Unlock()
					return wire.UntypedAPIFuture{RequestID: prev}, nil
				}
			}
		}
		s.mu.Unlock()
		if sp == nil || sp.owner != owner {
			return nil, notFound("sampling session", req.SamplingSessionID)
		}
		t = sp.target
	} else if t, err = s.target(ctx, owner, req.ModelPath, req.BaseModel); err != nil {
		return nil, err
	}
	if req.MinPolicyVersion != nil && *req.MinPolicyVersion > 0 && t.ref == nil {
		return nil, userErr(http.StatusBadRequest, "field min_policy_version: %d, but this call samples the base model %s (version 0); sample a sampler checkpoint (model_path) instead", *req.MinPolicyVersion, t.base)
	}
	params := req.SamplingParams.ToRL(s.cfg.DefaultMaxTokens)
	// The request's own flag (compute_logprobs, include_prompt_logprobs)
	// goes to the sampler with the rest: without it no backend computes them.
	params.PromptLogprobs = req.PromptLogprobs
	params.TopKPromptLogprobs = req.TopKPromptLogprobs
	spec, _ := s.modelSpec(t.base)
	prompt := req.Prompt.AllTokens()
	if err := checkTokens(spec, "prompt", prompt); err != nil {
		return nil, err
	}
	if spec.MaxContextLength > 0 && len(prompt)+params.MaxTokens > spec.MaxContextLength {
		return nil, userErr(http.StatusBadRequest, "field sampling_params.max_tokens: prompt (%d tokens) + max_tokens (%d) exceeds the %d model %s takes", len(prompt), params.MaxTokens, spec.MaxContextLength, spec.Name)
	}
	f, err := s.newFuture(owner, "sample")
	if err != nil {
		return nil, err
	}
	if sp != nil && req.SeqID != nil {
		s.mu.Lock()
		sp.seqs[*req.SeqID] = f.id
		sp.order = append(sp.order, *req.SeqID)
		if len(sp.order) > maxSeen {
			delete(sp.seqs, sp.order[0])
			sp.order = sp.order[1:]
		}
		s.mu.Unlock()
	}
	s.goOwned(func() {
		if req.MinPolicyVersion != nil {
			var err error
			if t, err = s.atLeast(s.ctx, owner, t, policy.Version(*req.MinPolicyVersion)); err != nil {
				s.futures.fail(f, wire.ErrorCategoryUser, err.Error())
				return
			}
		}
		smp, err := s.samplerFor(s.ctx, t)
		if err != nil {
			s.futures.fail(f, wire.ErrorCategoryServer, fmt.Sprintf("load sampler for %s: %v", t.key, err))
			return
		}
		out, err := smp.Sample(s.ctx, req.Prompt, req.NumSamples, params)
		if err != nil {
			s.futures.fail(f, wire.ErrorCategoryUnknown, fmt.Sprintf("sample: %v", err))
			return
		}
		if req.PromptLogprobs && len(out.PromptLogprobs) != len(prompt) {
			s.futures.fail(f, wire.ErrorCategoryUser, "prompt_logprobs: this backend did not compute them")
			return
		}
		if req.TopKPromptLogprobs > 0 && len(out.TopKPromptLogprobs) != len(prompt) {
			s.futures.fail(f, wire.ErrorCategoryUser, "topk_prompt_logprobs: this backend did not compute them")
			return
		}
		s.futures.succeed(f, wire.SampleResponseFromRL(out, req.PromptLogprobs))
	})
	return wire.UntypedAPIFuture{RequestID: f.id}, nil
}

// samplerFor returns the cached sampler of t, making and loading it on
// first use. At most MaxSamplers stay cached; the least recently used
// goes first (calls still using it finish normally).
func (s *Server) samplerFor(ctx context.Context, t samplerTarget) (rl.Sampler, error) {
	s.mu.Lock()
	e, ok := s.samplers[t.key]
	if ok {
		e.used = s.now()
		s.mu.Unlock()
	} else {
		e = &samplerEntry{ready: make(chan struct{}), used: s.now()}
		s.samplers[t.key] = e
		s.evictSamplersLocked()
		s.mu.Unlock()
		smp, err := s.be.NewSampler(ctx, t.base)
		if err == nil && t.ref != nil {
			err = smp.Load(ctx, *t.ref)
		}
		e.sampler, e.err = smp, err
		close(e.ready)
		if err != nil {
			s.mu.Lock()
			if s.samplers[t.key] == e {
				delete(s.samplers, t.key)
			}
			s.mu.Unlock()
		}
	}
	select {
	case <-e.ready:
		return e.sampler, e.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (s *Server) evictSamplersLocked() {
	for len(s.samplers) > s.cfg.MaxSamplers {
		var oldest string
		var at time.Time
		for k, e := range s.samplers {
			select {
			case <-e.ready:
			default:
				continue // still loading
			}
			if oldest == "" || e.used.Before(at) {
				oldest, at = k, e.used
			}
		}
		if oldest == "" {
			return
		}
		delete(s.samplers, oldest)
	}
}

// versionPoll is how often atLeast looks for a newly published version.
const versionPoll = 25 * time.Millisecond

// atLeast returns t if it serves version min or newer, else the newest
// sampler checkpoint of t's run with a version ≥ min, waiting up to
// VersionWait for the trainer (perhaps another process sharing the store)
// to publish one.
func (s *Server) atLeast(ctx context.Context, owner string, t samplerTarget, min policy.Version) (samplerTarget, error) {
	if t.ref == nil || t.ref.Version >= min {
		return t, nil
	}
	run := t.ref.Run
	if p, err := wire.ParseTinkerPath(t.key); err == nil {
		run = p.Run
	}
	deadline := time.NewTimer(s.cfg.VersionWait)
	defer deadline.Stop()
	tick := time.NewTicker(versionPoll)
	defer tick.Stop()
	for {
		if ck, ok := s.newestSampler(ctx, owner, run); ok && ck.Ref.Version >= min {
			return targetOf(ck), nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return t, fmt.Errorf("min_policy_version %d: run %s published no sampler checkpoint that new within %v (it serves version %d)", min, run, s.cfg.VersionWait, t.ref.Version)
		case <-ctx.Done():
			return t, context.Cause(ctx)
		}
	}
}

// newestSampler finds owner's sampler checkpoint of run with the highest
// version, among this server's saves and the CheckpointStore's.
func (s *Server) newestSampler(ctx context.Context, owner, run string) (Checkpoint, bool) {
	var (
		best Checkpoint
		ok   bool
	)
	consider := func(ck Checkpoint) {
		if ck.Path.Kind == wire.KindSamplerWeights && ck.Path.Run == run && (!ok || ck.Ref.Version > best.Ref.Version) {
			best, ok = ck, true
		}
	}
	s.mu.Lock()
	for _, oc := range s.ckpts {
		if oc.owner == owner {
			consider(oc.Checkpoint)
		}
	}
	s.mu.Unlock()
	if s.store != nil {
		if cks, err := s.store.List(ctx, owner, run); err == nil {
			for _, ck := range cks {
				consider(ck)
			}
		}
	}
	return best, ok
}

// minVersionHeader is Baseten Loops' header for the least policy version a
// sample may come from: an alias of the body's min_policy_version.
const minVersionHeader = "X-Min-Policy-Version"

// minVersionFromHeader sets req's MinPolicyVersion from the header, which
// must agree with the body's field when both are given.
func minVersionFromHeader(ctx context.Context, req *wire.SampleRequest) error {
	v := headerOf(ctx).Get(minVersionHeader)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return userErr(http.StatusBadRequest, "header %s: %q; want a policy version ≥ 0", minVersionHeader, v)
	}
	if req.MinPolicyVersion != nil && *req.MinPolicyVersion != n {
		return userErr(http.StatusBadRequest, "header %s: %d, but the body's min_policy_version is %d; give one, or the same in both", minVersionHeader, n, *req.MinPolicyVersion)
	}
	req.MinPolicyVersion = &n
	return nil
}

// getSampler answers GET samplers/{id}: the base model and checkpoint a
// sampling session serves.
func (s *Server) getSampler(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	sp := s.sampling[id]
	s.mu.Unlock()
	if sp == nil || sp.owner != ownerOf(r) {
		writeErr(w, notFound("sampling session", id))
		return
	}
	resp := wire.GetSamplerResponse{SamplerID: sp.id, BaseModel: sp.target.base}
	if sp.target.ref != nil {
		path := sp.target.key
		resp.ModelPath = &path
	}
	writeJSON(w, http.StatusOK, resp)
}
