package server

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

type startFn = func(ctx context.Context) func(ctx context.Context) outcome

// training runs the steps every training endpoint shares: find the model,
// build the call (a bad body uses up its seq_id, see reject), register a
// future and put the call in seq_id order.
func (s *Server) training(owner, kind string, body []byte, build func(m *model) (startFn, error)) (any, error) {
	h, err := wire.DecodeTrainingHeader(body)
	if err != nil {
		return nil, badRequest(err)
	}
	return s.trainingAt(owner, kind, h, build)
}

// trainingAt is training for a call whose model and seq_id are known.
func (s *Server) trainingAt(owner, kind string, h wire.TrainingHeader, build func(m *model) (startFn, error)) (any, error) {
	m, err := s.modelFor(owner, h.ModelID)
	if err != nil {
		return nil, err
	}
	start, err := build(m)
	if err != nil {
		// A call refused for what it asks (a bad body, an unknown
		// checkpoint) uses up its seq_id, so the calls after it go on.
		var ae *apiError
		if h.SeqID != nil && errors.As(err, &ae) && ae.status/100 == 4 && ae.status != http.StatusTooManyRequests {
			s.reject(m, owner, kind, *h.SeqID, err)
		}
		return nil, err
	}
	f, err := s.newFuture(owner, kind)
	if err != nil {
		return nil, err
	}
	return s.submit(m, &trainOp{kind: kind, seq: h.SeqID, fut: f, start: start})
}

func (s *Server) forward(ctx context.Context, owner string, body []byte) (any, error) {
	if isProto(headerOf(ctx)) {
		return s.fwdBwdProto(owner, body, true)
	}
	return s.training(owner, "forward", body, func(m *model) (startFn, error) { return s.fwdBwd(m, body, true) })
}

func (s *Server) forwardBackward(ctx context.Context, owner string, body []byte) (any, error) {
	if isProto(headerOf(ctx)) {
		return s.fwdBwdProto(owner, body, false)
	}
	return s.training(owner, "forward_backward", body, func(m *model) (startFn, error) { return s.fwdBwd(m, body, false) })
}

// isProto reports whether a request's body is protobuf (the SDK v0.25's
// forward_backward, which carries forward calls too, as forward_only).
func isProto(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == wire.ContentTypeProto
}

// fwdBwdProto serves a protobuf forward_backward request: a forward when
// it says forward_only (or came to the forward endpoint), which never
// touches the gradients.
func (s *Server) fwdBwdProto(owner string, body []byte, forward bool) (any, error) {
	req, err := wire.DecodeForwardBackwardRequestProto(body)
	if err != nil {
		// A bad body still uses up its seq_id when it names one, as in
		// JSON (see training), so the calls after it go on.
		h, herr := wire.DecodeTrainingHeaderProto(body)
		if herr != nil {
			return nil, badRequest(err)
		}
		return s.trainingAt(owner, "forward_backward", h, func(*model) (startFn, error) { return nil, badRequest(err) })
	}
	req.Forward = req.Forward || forward
	kind := "forward_backward"
	if req.Forward {
		kind = "forward"
	}
	return s.trainingAt(owner, kind, wire.TrainingHeader{ModelID: req.ModelID, SeqID: req.SeqID},
		func(m *model) (startFn, error) { return s.fwdBwdReq(m, req) })
}

func (s *Server) fwdBwd(m *model, body []byte, forward bool) (startFn, error) {
	req, err := wire.DecodeForwardBackwardRequest(body, forward)
	if err != nil {
		return nil, badRequest(err)
	}
	return s.fwdBwdReq(m, req)
}

func (s *Server) fwdBwdReq(m *model, req wire.ForwardBackwardRequest) (startFn, error) {
	forward := req.Forward
	spec, _ := s.modelSpec(m.base)
	key := "forward_backward_input"
	if forward {
		key = "forward_input"
	}
	for i, d := range req.Input.Data {
		p := fmt.Sprintf("%s.data[%d]", key, i)
		if err := checkTokens(spec, p+".model_input", d.ModelInput.AllTokens()); err != nil {
			return nil, err
		}
		if t, ok := d.LossFnInputs[rl.InputTargetTokens]; ok {
			toks := make([]int, len(t.Ints))
			for j, x := range t.Ints {
				toks[j] = int(x)
			}
			if err := checkTokens(spec, p+".loss_fn_inputs.target_tokens", toks); err != nil {
				return nil, err
			}
		}
		if spec.MaxContextLength > 0 && d.ModelInput.Len() > spec.MaxContextLength {
			return nil, userErr(http.StatusBadRequest, "field %s.model_input: %d tokens, more than the %d model %s takes", p, d.ModelInput.Len(), spec.MaxContextLength, spec.Name)
		}
	}
	return func(ctx context.Context) func(context.Context) outcome {
		var fut *rl.Future[rl.ForwardBackwardOutput]
		if forward {
			fut = m.trainer.Forward(ctx, req.Input.Data, req.Input.Loss)
		} else {
			fut = m.trainer.ForwardBackward(ctx, req.Input.Data, req.Input.Loss)
		}
		return func(ctx context.Context) outcome {
			out, err := fut.Wait(ctx)
			return outcome{result: wire.ForwardBackwardOutputFromRL(out), err: err}
		}
	}, nil
}

func (s *Server) optimStep(_ context.Context, owner string, body []byte) (any, error) {
	return s.training(owner, "optim_step", body, func(m *model) (startFn, error) {
		req, err := wire.DecodeOptimStepRequest(body)
		if err != nil {
			return nil, badRequest(err)
		}
		return func(ctx context.Context) func(context.Context) outcome {
			fut := m.trainer.OptimStep(ctx, req.AdamParams)
			return func(ctx context.Context) outcome {
				out, err := fut.Wait(ctx)
				if err != nil {
					return outcome{err: err}
				}
				v := out.Version
				return outcome{result: wire.OptimStepResponse{Metrics: out.Metrics}, version: &v}
			}
		}, nil
	})
}

// checkpointName picks a name when the client gave none.
func checkpointName(given string, seq *int64, prefix string) string {
	if given != "" {
		return given
	}
	if seq != nil {
		return prefix + "-" + strconv.FormatInt(*seq, 10)
	}
	return prefix + "-" + newID("")
}

func (s *Server) saveWeights(_ context.Context, owner string, body []byte) (any, error) {
	return s.training(owner, "save_weights", body, func(m *model) (startFn, error) {
		req, err := wire.DecodeSaveWeightsRequest(body)
		if err != nil {
			return nil, badRequest(err)
		}
		path := wire.TinkerPath{Run: m.id, Kind: wire.KindWeights, Name: checkpointName(req.Path, req.SeqID, "state")}
		if !req.Overwrite && s.ownsLive(owner, path) {
			return nil, userErr(http.StatusBadRequest, "field path: checkpoint %s exists; save under another name, or set overwrite to true to replace it", path)
		}
		return func(ctx context.Context) func(context.Context) outcome {
			fut := m.trainer.SaveState(ctx, path.Name)
			return func(ctx context.Context) outcome {
				ref, err := fut.Wait(ctx)
				if err != nil {
					return outcome{err: err}
				}
				if _, err := s.recordCheckpoint(ctx, owner, m, path, ref, req.TTLSeconds); err != nil {
					return outcome{err: err}
				}
				return outcome{result: wire.PathResponse{Path: path.String(), Type: "save_weights"}}
			}
		}, nil
	})
}

func (s *Server) saveForSampler(_ context.Context, owner string, body []byte) (any, error) {
	return s.training(owner, "save_weights_for_sampler", body, func(m *model) (startFn, error) {
		req, err := wire.DecodeSaveWeightsForSamplerRequest(body)
		if err != nil {
			return nil, badRequest(err)
		}
		ephemeral := req.Path == "" && req.SamplingSessionSeqID != nil
		if ephemeral && !s.cfg.serves(RoleSampler) {
			return nil, userErr(http.StatusBadRequest, "field path: missing; this server's role is %s, so it cannot open a sampling session — name the checkpoint", s.cfg.Role)
		}
		path := wire.TinkerPath{Run: m.id, Kind: wire.KindSamplerWeights, Name: checkpointName(req.Path, req.SeqID, "sampler")}
		return func(ctx context.Context) func(context.Context) outcome {
			fut := m.trainer.SaveForSampler(ctx, path.Name)
			return func(ctx context.Context) outcome {
				ref, err := fut.Wait(ctx)
				if err != nil {
					return outcome{err: err}
				}
				ck, err := s.recordCheckpoint(ctx, owner, m, path, ref, req.TTLSeconds)
				if err != nil {
					return outcome{err: err}
				}
				if !ephemeral {
					return outcome{result: wire.PathResponse{Path: path.String(), Type: "save_weights_for_sampler"}}
				}
				sp := s.openSamplingSession(owner, m.session, targetOf(ck))
				return outcome{result: wire.PathResponse{SamplingSessionID: sp.id, Type: "save_weights_for_sampler"}}
			}
		}, nil
	})
}

func (s *Server) loadWeights(ctx context.Context, owner string, body []byte) (any, error) {
	return s.training(owner, "load_weights", body, func(m *model) (startFn, error) {
		req, err := wire.DecodeLoadWeightsRequest(body)
		if err != nil {
			return nil, badRequest(err)
		}
		p, _ := wire.ParseTinkerPath(req.Path)
		if p.Kind != wire.KindWeights {
			return nil, userErr(http.StatusBadRequest, "field path: %s is a sampler checkpoint; load_weights wants a weights/ checkpoint from save_weights", req.Path)
		}
		ck, err := s.resolve(ctx, owner, p)
		if err != nil {
			return nil, err
		}
		if ck.Base != "" && ck.Base != m.base {
			return nil, userErr(http.StatusBadRequest, "field path: %s adapts %s, but model %s adapts %s", req.Path, ck.Base, m.id, m.base)
		}
		return func(ctx context.Context) func(context.Context) outcome {
			fut := m.trainer.LoadState(ctx, ck.Ref, req.Optimizer)
			return func(ctx context.Context) outcome {
				if _, err := fut.Wait(ctx); err != nil {
					return outcome{err: err}
				}
				v := ck.Ref.Version
				return outcome{result: wire.PathResponse{Path: req.Path, Type: "load_weights"}, version: &v}
			}
		}, nil
	})
}

// ownedCheckpoint is a checkpoint this server saved, with its tenant.
type ownedCheckpoint struct {
	owner string
	Checkpoint
}

// recordCheckpoint remembers a save so it can be loaded, sampled and
// listed, and records it in the store when the store takes records.
func (s *Server) recordCheckpoint(ctx context.Context, owner string, m *model, p wire.TinkerPath, ref policy.Ref, ttl *int64) (Checkpoint, error) {
	ck := Checkpoint{Path: p, Ref: ref, Base: m.base, Created: s.now()}
	if ttl != nil {
		ck.Expires = ck.Created.Add(time.Duration(*ttl) * time.Second)
	}
	s.mu.Lock()
	s.ckpts[p.String()] = ownedCheckpoint{owner: owner, Checkpoint: ck}
	s.mu.Unlock()
	if rec, ok := s.store.(CheckpointRecorder); ok {
		if err := rec.Record(ctx, owner, ck); err != nil {
			return ck, fmt.Errorf("record %s in the checkpoint store: %w", p, err)
		}
	}
	return ck, nil
}

// ownsLive reports whether owner has a checkpoint at p that has not
// expired, among this server's saves.
func (s *Server) ownsLive(owner string, p wire.TinkerPath) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	oc, ok := s.ckpts[p.String()]
	return ok && oc.owner == owner && !oc.expired(s.now())
}

// resolve finds the checkpoint p names among owner's: this server's saves
// first, then the CheckpointStore.
func (s *Server) resolve(ctx context.Context, owner string, p wire.TinkerPath) (Checkpoint, error) {
	s.mu.Lock()
	oc, ok := s.ckpts[p.String()]
	s.mu.Unlock()
	if ok && oc.owner == owner {
		if oc.expired(s.now()) {
			return Checkpoint{}, userErr(http.StatusNotFound, "checkpoint %s expired at %s (its ttl_seconds)", p, oc.Expires.UTC().Format(time.RFC3339))
		}
		return oc.Checkpoint, nil
	}
	if s.store != nil {
		if ck, err := s.store.Resolve(ctx, owner, p); err == nil {
			return ck, nil
		}
	}
	return Checkpoint{}, notFound("checkpoint", p.String())
}
