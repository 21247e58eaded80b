package wire

import (
	"encoding/json"

	"github.com/tandemrl/tandem/rl"
)

// The request types below mirror the SDK's types/*_request.py. Each has a
// Decode function that applies the SDK's defaults to absent fields, ignores
// unknown fields, and returns a *FieldError naming the first bad field.
// Their JSON encoding is the SDK's exclude_unset form: optional fields that
// are unset are left out.

// CreateSessionRequest is POST /api/v1/create_session.
type CreateSessionRequest struct {
	Tags         []string       `json:"tags"`
	UserMetadata map[string]any `json:"user_metadata"`
	SDKVersion   string         `json:"sdk_version"`
}

// DecodeCreateSessionRequest decodes and checks a create_session body.
func DecodeCreateSessionRequest(b []byte) (CreateSessionRequest, error) {
	var r CreateSessionRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "create_session"); err != nil {
		return r, err
	}
	if l, _, err := o.list("tags", false); err != nil {
		return r, err
	} else {
		for i, v := range l {
			s, ok := v.(string)
			if !ok {
				return r, fieldErr(index(o.at("tags"), i), "got %s, want a string", kind(v))
			}
			r.Tags = append(r.Tags, s)
		}
	}
	if mo, found, err := o.object("user_metadata", false); err != nil {
		return r, err
	} else if found {
		r.UserMetadata = mo.m
	}
	if r.SDKVersion, err = o.str("sdk_version", false); err != nil {
		return r, err
	}
	return r, nil
}

// SessionHeartbeatRequest is POST /api/v1/session_heartbeat.
type SessionHeartbeatRequest struct {
	SessionID string `json:"session_id"`
}

// DecodeSessionHeartbeatRequest decodes and checks a session_heartbeat body.
func DecodeSessionHeartbeatRequest(b []byte) (SessionHeartbeatRequest, error) {
	var r SessionHeartbeatRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "session_heartbeat"); err != nil {
		return r, err
	}
	r.SessionID, err = o.str("session_id", true)
	return r, err
}

// CreateSamplingSessionRequest is POST /api/v1/create_sampling_session.
// ModelPath (a tinker:// path) or BaseModel says what to sample from.
type CreateSamplingSessionRequest struct {
	SessionID            string `json:"session_id"`
	SamplingSessionSeqID int64  `json:"sampling_session_seq_id"`
	BaseModel            string `json:"base_model,omitempty"`
	ModelPath            string `json:"model_path,omitempty"`
}

// DecodeCreateSamplingSessionRequest decodes and checks a create_sampling_session body.
func DecodeCreateSamplingSessionRequest(b []byte) (CreateSamplingSessionRequest, error) {
	var r CreateSamplingSessionRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "create_sampling_session"); err != nil {
		return r, err
	}
	if r.SessionID, err = o.str("session_id", true); err != nil {
		return r, err
	}
	if r.SamplingSessionSeqID, err = o.integer("sampling_session_seq_id", 0, true); err != nil {
		return r, err
	}
	if r.BaseModel, err = o.str("base_model", false); err != nil {
		return r, err
	}
	if r.ModelPath, err = o.str("model_path", false); err != nil {
		return r, err
	}
	if r.ModelPath != "" {
		if _, err := ParseTinkerPath(r.ModelPath); err != nil {
			return r, fieldErr(o.at("model_path"), "%v", err)
		}
	} else if r.BaseModel == "" {
		return r, fieldErr("model_path", "missing; want model_path or base_model")
	}
	return r, nil
}

// CreateModelRequest is POST /api/v1/create_model. A missing lora_config
// gets DefaultLoraConfig (tandem trains LoRA adapters only).
type CreateModelRequest struct {
	SessionID    string         `json:"session_id"`
	ModelSeqID   int64          `json:"model_seq_id"`
	BaseModel    string         `json:"base_model"`
	UserMetadata map[string]any `json:"user_metadata,omitempty"`
	LoraConfig   LoraConfig     `json:"lora_config"`
}

// DecodeCreateModelRequest decodes and checks a create_model body.
func DecodeCreateModelRequest(b []byte) (CreateModelRequest, error) {
	var r CreateModelRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "create_model"); err != nil {
		return r, err
	}
	if r.SessionID, err = o.str("session_id", true); err != nil {
		return r, err
	}
	if r.ModelSeqID, err = o.integer("model_seq_id", 0, true); err != nil {
		return r, err
	}
	if r.BaseModel, err = o.str("base_model", true); err != nil {
		return r, err
	}
	if r.BaseModel == "" {
		return r, fieldErr(o.at("base_model"), "empty; want a model name")
	}
	if mo, found, err := o.object("user_metadata", false); err != nil {
		return r, err
	} else if found {
		r.UserMetadata = mo.m
	}
	r.LoraConfig = DefaultLoraConfig()
	if lo, found, err := o.object("lora_config", false); err != nil {
		return r, err
	} else if found {
		if r.LoraConfig, err = decodeLoraConfig(lo); err != nil {
			return r, err
		}
	}
	return r, nil
}

// ForwardBackwardInput is the batch and loss of a forward or forward_backward call.
type ForwardBackwardInput struct {
	Data []rl.Datum
	Loss rl.Loss
}

type fbiWire struct {
	Data         []rl.Datum         `json:"data"`
	LossFn       rl.LossName        `json:"loss_fn"`
	LossFnConfig map[string]float64 `json:"loss_fn_config,omitempty"`
}

// MarshalJSON writes {data, loss_fn, loss_fn_config}.
func (in ForwardBackwardInput) MarshalJSON() ([]byte, error) {
	d := in.Data
	if d == nil {
		d = []rl.Datum{}
	}
	return json.Marshal(fbiWire{Data: d, LossFn: in.Loss.Name, LossFnConfig: in.Loss.Config})
}

// ForwardBackwardRequest is POST /api/v1/forward_backward, and with
// Forward set, POST /api/v1/forward (whose input key is forward_input).
type ForwardBackwardRequest struct {
	Input   ForwardBackwardInput
	ModelID string
	SeqID   *int64
	Forward bool
}

// MarshalJSON writes the SDK's form for the endpoint Forward selects.
func (r ForwardBackwardRequest) MarshalJSON() ([]byte, error) {
	key := "forward_backward_input"
	if r.Forward {
		key = "forward_input"
	}
	m := map[string]any{key: r.Input, "model_id": r.ModelID}
	if r.SeqID != nil {
		m["seq_id"] = *r.SeqID
	}
	return json.Marshal(m)
}

// DecodeForwardBackwardRequest decodes a forward_backward body (forward
// false) or a forward body (forward true).
func DecodeForwardBackwardRequest(b []byte, forward bool) (ForwardBackwardRequest, error) {
	r := ForwardBackwardRequest{Forward: forward}
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if r.ModelID, r.SeqID, err = modelAndSeq(o); err != nil {
		return r, err
	}
	key := "forward_backward_input"
	if forward {
		key = "forward_input"
	}
	in, _, err := o.object(key, true)
	if err != nil {
		return r, err
	}
	r.Input, err = decodeForwardBackwardInput(in)
	return r, err
}

// modelAndSeq reads the model_id and seq_id every training call carries.
func modelAndSeq(o obj) (string, *int64, error) {
	id, err := o.str("model_id", true)
	if err != nil {
		return "", nil, err
	}
	if id == "" {
		return "", nil, fieldErr(o.at("model_id"), "empty; want the id create_model returned")
	}
	seq, err := o.optInt("seq_id")
	if err != nil {
		return "", nil, err
	}
	if seq != nil && *seq < 0 {
		return "", nil, fieldErr(o.at("seq_id"), "%d is negative", *seq)
	}
	return id, seq, nil
}

// TrainingHeader is the part every training request shares.
type TrainingHeader struct {
	ModelID string
	SeqID   *int64
}

// DecodeTrainingHeader reads only model_id and seq_id, so that a server can
// account for the seq_id of a request whose body is otherwise bad.
func DecodeTrainingHeader(b []byte) (TrainingHeader, error) {
	o, err := parseObject(b)
	if err != nil {
		return TrainingHeader{}, err
	}
	id, seq, err := modelAndSeq(o)
	return TrainingHeader{ModelID: id, SeqID: seq}, err
}

// OptimStepRequest is POST /api/v1/optim_step.
type OptimStepRequest struct {
	AdamParams rl.AdamParams
	ModelID    string
	SeqID      *int64
}

// MarshalJSON writes {adam_params, model_id, seq_id}.
func (r OptimStepRequest) MarshalJSON() ([]byte, error) {
	m := map[string]any{"adam_params": encodeAdam(r.AdamParams), "model_id": r.ModelID}
	if r.SeqID != nil {
		m["seq_id"] = *r.SeqID
	}
	return json.Marshal(m)
}

// DecodeOptimStepRequest decodes and checks an optim_step body.
func DecodeOptimStepRequest(b []byte) (OptimStepRequest, error) {
	var r OptimStepRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "optim_step"); err != nil {
		return r, err
	}
	if r.ModelID, r.SeqID, err = modelAndSeq(o); err != nil {
		return r, err
	}
	ao, _, err := o.object("adam_params", true)
	if err != nil {
		return r, err
	}
	r.AdamParams, err = decodeAdam(ao)
	return r, err
}

// SaveWeightsRequest is POST /api/v1/save_weights (the SDK's save_state);
// SaveWeightsForSamplerRequest is POST /api/v1/save_weights_for_sampler.
// Path is a checkpoint name, not a file path; empty means "pick one".
type SaveWeightsRequest struct {
	ModelID string `json:"model_id"`
	Path    string `json:"path,omitempty"`
	SeqID   *int64 `json:"seq_id,omitempty"`
	// TTLSeconds (SDK ≥ 0.9.0): the checkpoint expires that long after it
	// is saved; nil means never.
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"`
	// Overwrite (SDK ≥ 0.20.0) replaces a checkpoint of the same name;
	// without it such a save is refused.
	Overwrite bool `json:"overwrite,omitempty"`
}

// SaveWeightsForSamplerRequest: without Path, SamplingSessionSeqID asks for
// an ephemeral save answered with a sampling_session_id.
type SaveWeightsForSamplerRequest struct {
	ModelID              string `json:"model_id"`
	Path                 string `json:"path,omitempty"`
	SamplingSessionSeqID *int64 `json:"sampling_session_seq_id,omitempty"`
	SeqID                *int64 `json:"seq_id,omitempty"`
	TTLSeconds           *int64 `json:"ttl_seconds,omitempty"` // as in SaveWeightsRequest
}

// MaxTTLSeconds bounds ttl_seconds: 100 years.
const MaxTTLSeconds = 100 * 365 * 24 * 3600

func ttlSeconds(o obj) (*int64, error) {
	t, err := o.optInt("ttl_seconds")
	if err != nil || t == nil {
		return nil, err
	}
	if *t < 1 || *t > MaxTTLSeconds {
		return nil, fieldErr(o.at("ttl_seconds"), "%d out of range; want 1 to %d seconds, or null for a checkpoint that never expires", *t, MaxTTLSeconds)
	}
	return t, nil
}

// DecodeSaveWeightsRequest decodes and checks a save_weights body.
func DecodeSaveWeightsRequest(b []byte) (SaveWeightsRequest, error) {
	var r SaveWeightsRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "save_weights"); err != nil {
		return r, err
	}
	if r.ModelID, r.SeqID, err = modelAndSeq(o); err != nil {
		return r, err
	}
	if r.Path, err = checkpointName(o); err != nil {
		return r, err
	}
	if r.TTLSeconds, err = ttlSeconds(o); err != nil {
		return r, err
	}
	r.Overwrite, err = o.boolean("overwrite", false)
	return r, err
}

// DecodeSaveWeightsForSamplerRequest decodes and checks a save_weights_for_sampler body.
func DecodeSaveWeightsForSamplerRequest(b []byte) (SaveWeightsForSamplerRequest, error) {
	var r SaveWeightsForSamplerRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "save_weights_for_sampler"); err != nil {
		return r, err
	}
	if r.ModelID, r.SeqID, err = modelAndSeq(o); err != nil {
		return r, err
	}
	if r.Path, err = checkpointName(o); err != nil {
		return r, err
	}
	if r.TTLSeconds, err = ttlSeconds(o); err != nil {
		return r, err
	}
	r.SamplingSessionSeqID, err = o.optInt("sampling_session_seq_id")
	return r, err
}

func checkpointName(o obj) (string, error) {
	p, err := o.str("path", false)
	if err != nil || p == "" {
		return "", err
	}
	if err := ValidName(p); err != nil {
		return "", fieldErr(o.at("path"), "%v", err)
	}
	return p, nil
}

// LoadWeightsRequest is POST /api/v1/load_weights (the SDK's load_state).
// Optimizer (sent by later SDKs' load_state_with_optimizer) also restores
// the optimizer state; absent means false.
type LoadWeightsRequest struct {
	ModelID   string `json:"model_id"`
	Path      string `json:"path"`
	Optimizer bool   `json:"optimizer,omitempty"`
	SeqID     *int64 `json:"seq_id,omitempty"`
}

// DecodeLoadWeightsRequest decodes and checks a load_weights body.
func DecodeLoadWeightsRequest(b []byte) (LoadWeightsRequest, error) {
	var r LoadWeightsRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "load_weights"); err != nil {
		return r, err
	}
	if r.ModelID, r.SeqID, err = modelAndSeq(o); err != nil {
		return r, err
	}
	if r.Path, err = o.str("path", true); err != nil {
		return r, err
	}
	if _, err := ParseTinkerPath(r.Path); err != nil {
		return r, fieldErr(o.at("path"), "%v", err)
	}
	r.Optimizer, err = o.boolean("optimizer", false)
	return r, err
}

// SampleRequest is POST /api/v1/asample. What to sample from is named by
// SamplingSessionID, else ModelPath, else BaseModel.
type SampleRequest struct {
	NumSamples         int            `json:"num_samples"`
	Prompt             rl.ModelInput  `json:"prompt"`
	SamplingParams     SamplingParams `json:"sampling_params"`
	BaseModel          string         `json:"base_model,omitempty"`
	ModelPath          string         `json:"model_path,omitempty"`
	SamplingSessionID  string         `json:"sampling_session_id,omitempty"`
	SeqID              *int64         `json:"seq_id,omitempty"`
	PromptLogprobs     bool           `json:"prompt_logprobs,omitempty"`
	TopKPromptLogprobs int            `json:"topk_prompt_logprobs,omitempty"`
	// MinPolicyVersion is a tandem extension (other servers ignore it): the
	// oldest adapter version the caller accepts. A tandem server answers
	// from the newest sampler checkpoint of the same run whose version is
	// at least this, waiting a bounded time for the trainer to publish one.
	// The version served comes back in SampleResponse.PolicyVersion.
	MinPolicyVersion *int64 `json:"min_policy_version,omitempty"`
}

// MaxNumSamples bounds num_samples in one request.
const MaxNumSamples = 4096

// DecodeSampleRequest decodes and checks an asample body.
func DecodeSampleRequest(b []byte) (SampleRequest, error) {
	var r SampleRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", "sample"); err != nil {
		return r, err
	}
	n, err := o.integer("num_samples", 1, false)
	if err != nil {
		return r, err
	}
	if n < 1 || n > MaxNumSamples {
		return r, fieldErr(o.at("num_samples"), "%d out of range; want 1 to %d", n, MaxNumSamples)
	}
	r.NumSamples = int(n)
	po, _, err := o.object("prompt", true)
	if err != nil {
		return r, err
	}
	if r.Prompt, err = decodeModelInput(po); err != nil {
		return r, err
	}
	so, _, err := o.object("sampling_params", true)
	if err != nil {
		return r, err
	}
	if r.SamplingParams, err = decodeSamplingParams(so); err != nil {
		return r, err
	}
	if r.BaseModel, err = o.str("base_model", false); err != nil {
		return r, err
	}
	if r.ModelPath, err = o.str("model_path", false); err != nil {
		return r, err
	}
	if r.ModelPath != "" {
		if _, err := ParseTinkerPath(r.ModelPath); err != nil {
			return r, fieldErr(o.at("model_path"), "%v", err)
		}
	}
	if r.SamplingSessionID, err = o.str("sampling_session_id", false); err != nil {
		return r, err
	}
	if r.SamplingSessionID == "" && r.ModelPath == "" && r.BaseModel == "" {
		return r, fieldErr("sampling_session_id", "missing; want sampling_session_id, model_path or base_model")
	}
	if r.SeqID, err = o.optInt("seq_id"); err != nil {
		return r, err
	}
	if r.PromptLogprobs, err = o.boolean("prompt_logprobs", false); err != nil {
		return r, err
	}
	k, err := o.integer("topk_prompt_logprobs", 0, false)
	if err != nil {
		return r, err
	}
	if k < 0 || k > rl.MaxTopKPromptLogprobs {
		return r, fieldErr(o.at("topk_prompt_logprobs"), "%d out of range; want 0 to %d", k, rl.MaxTopKPromptLogprobs)
	}
	r.TopKPromptLogprobs = int(k)
	if r.MinPolicyVersion, err = o.optInt("min_policy_version"); err != nil {
		return r, err
	}
	if r.MinPolicyVersion != nil && *r.MinPolicyVersion < 0 {
		return r, fieldErr(o.at("min_policy_version"), "%d is negative; want a policy version ≥ 0", *r.MinPolicyVersion)
	}
	return r, nil
}

// FutureRetrieveRequest is POST /api/v1/retrieve_future.
type FutureRetrieveRequest struct {
	RequestID string `json:"request_id"`
}

// DecodeFutureRetrieveRequest decodes and checks a retrieve_future body.
func DecodeFutureRetrieveRequest(b []byte) (FutureRetrieveRequest, error) {
	var r FutureRetrieveRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if r.RequestID, err = o.str("request_id", true); err != nil {
		return r, err
	}
	if r.RequestID == "" {
		return r, fieldErr(o.at("request_id"), "empty; want the id a call returned")
	}
	return r, nil
}

// ModelRequest is the body of get_info and unload_model: {model_id}.
type ModelRequest struct {
	ModelID string `json:"model_id"`
}

// DecodeModelRequest decodes a get_info or unload_model body; typ is the
// discriminator it may carry ("get_info" or "unload_model").
func DecodeModelRequest(b []byte, typ string) (ModelRequest, error) {
	var r ModelRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if err := o.literal("type", typ); err != nil {
		return r, err
	}
	if r.ModelID, err = o.str("model_id", true); err != nil {
		return r, err
	}
	if r.ModelID == "" {
		return r, fieldErr(o.at("model_id"), "empty; want the id create_model returned")
	}
	return r, nil
}
