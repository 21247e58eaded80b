package wire

import (
	"github.com/tandemrl/tandem/rl"
)

// The response types below mirror the SDK's types/*_response.py and are
// encoded as servers send them. The Decode functions are what a client
// uses on a server's answer: unknown fields ignored, required ones checked.

// UntypedAPIFuture is the immediate answer to every training and sampling
// call: the id to poll with retrieve_future.
type UntypedAPIFuture struct {
	RequestID string `json:"request_id"`
	ModelID   string `json:"model_id,omitempty"`
}

// DecodeUntypedAPIFuture decodes {request_id, model_id}.
func DecodeUntypedAPIFuture(b []byte) (UntypedAPIFuture, error) {
	var r UntypedAPIFuture
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if r.RequestID, err = o.str("request_id", true); err != nil {
		return r, err
	}
	if r.RequestID == "" {
		return r, fieldErr(o.at("request_id"), "empty")
	}
	r.ModelID, err = o.str("model_id", false)
	return r, err
}

// CreateSessionResponse answers create_session.
type CreateSessionResponse struct {
	Type           string `json:"type"`
	InfoMessage    string `json:"info_message,omitempty"`
	WarningMessage string `json:"warning_message,omitempty"`
	ErrorMessage   string `json:"error_message,omitempty"`
	SessionID      string `json:"session_id"`
}

// DecodeCreateSessionResponse decodes a create_session answer.
func DecodeCreateSessionResponse(b []byte) (CreateSessionResponse, error) {
	r := CreateSessionResponse{Type: "create_session"}
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if r.SessionID, err = o.str("session_id", true); err != nil {
		return r, err
	}
	for name, dst := range map[string]*string{"info_message": &r.InfoMessage, "warning_message": &r.WarningMessage, "error_message": &r.ErrorMessage} {
		if *dst, err = o.str(name, false); err != nil {
			return r, err
		}
	}
	return r, nil
}

// SessionHeartbeatResponse answers session_heartbeat.
type SessionHeartbeatResponse struct {
	Type string `json:"type"`
}

// CreateSamplingSessionResponse answers create_sampling_session.
type CreateSamplingSessionResponse struct {
	Type              string `json:"type"`
	SamplingSessionID string `json:"sampling_session_id"`
}

// DecodeCreateSamplingSessionResponse decodes a create_sampling_session answer.
func DecodeCreateSamplingSessionResponse(b []byte) (CreateSamplingSessionResponse, error) {
	r := CreateSamplingSessionResponse{Type: "create_sampling_session"}
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	r.SamplingSessionID, err = o.str("sampling_session_id", true)
	return r, err
}

// SupportedModel is one entry of get_server_capabilities.
type SupportedModel struct {
	ModelName        string `json:"model_name,omitempty"`
	MaxContextLength int    `json:"max_context_length,omitempty"`
}

// GetServerCapabilitiesResponse answers GET get_server_capabilities.
type GetServerCapabilitiesResponse struct {
	SupportedModels []SupportedModel `json:"supported_models"`
}

// DecodeGetServerCapabilitiesResponse decodes a get_server_capabilities answer.
func DecodeGetServerCapabilitiesResponse(b []byte) (GetServerCapabilitiesResponse, error) {
	var r GetServerCapabilitiesResponse
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	l, _, err := o.list("supported_models", true)
	if err != nil {
		return r, err
	}
	for i, v := range l {
		mo, err := asObject(index(o.at("supported_models"), i), v)
		if err != nil {
			return r, err
		}
		var m SupportedModel
		if m.ModelName, err = mo.str("model_name", false); err != nil {
			return r, err
		}
		n, err := mo.integer("max_context_length", 0, false)
		if err != nil {
			return r, err
		}
		m.MaxContextLength = int(n)
		r.SupportedModels = append(r.SupportedModels, m)
	}
	return r, nil
}

// HealthResponse answers GET healthz: {"status":"ok"}.
type HealthResponse struct {
	Status string `json:"status"`
}

// CreateModelResponse is the result of a create_model future.
type CreateModelResponse struct {
	ModelID string `json:"model_id"`
	Type    string `json:"type"`
}

// DecodeCreateModelResponse decodes a create_model result.
func DecodeCreateModelResponse(b []byte) (CreateModelResponse, error) {
	r := CreateModelResponse{Type: "create_model"}
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if r.ModelID, err = o.str("model_id", true); err != nil {
		return r, err
	}
	if r.ModelID == "" {
		return r, fieldErr(o.at("model_id"), "empty")
	}
	return r, nil
}

// LossFnOutputType is the loss_fn_output_type tandem's server reports.
const LossFnOutputType = "ArrayRecord"

// ForwardBackwardOutput is the result of forward and forward_backward
// futures: one map of per-token outputs per datum, and metrics whose names
// carry their reduction ("loss:sum").
type ForwardBackwardOutput struct {
	LossFnOutputType string                     `json:"loss_fn_output_type"`
	LossFnOutputs    []map[string]rl.TensorData `json:"loss_fn_outputs"`
	Metrics          map[string]float64         `json:"metrics"`
}

// ForwardBackwardOutputFromRL wraps an rl result for the wire.
func ForwardBackwardOutputFromRL(out rl.ForwardBackwardOutput) ForwardBackwardOutput {
	w := ForwardBackwardOutput{LossFnOutputType: LossFnOutputType, LossFnOutputs: out.LossFnOutputs, Metrics: out.Metrics}
	if w.LossFnOutputs == nil {
		w.LossFnOutputs = []map[string]rl.TensorData{}
	}
	if w.Metrics == nil {
		w.Metrics = map[string]float64{}
	}
	return w
}

// ToRL returns the rl form.
func (w ForwardBackwardOutput) ToRL() rl.ForwardBackwardOutput {
	return rl.ForwardBackwardOutput{LossFnOutputs: w.LossFnOutputs, Metrics: w.Metrics}
}

// DecodeForwardBackwardOutput decodes a forward/forward_backward result.
func DecodeForwardBackwardOutput(b []byte) (ForwardBackwardOutput, error) {
	var r ForwardBackwardOutput
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if r.LossFnOutputType, err = o.str("loss_fn_output_type", false); err != nil {
		return r, err
	}
	l, _, err := o.list("loss_fn_outputs", true)
	if err != nil {
		return r, err
	}
	r.LossFnOutputs = make([]map[string]rl.TensorData, len(l))
	for i, v := range l {
		mo, err := asObject(index(o.at("loss_fn_outputs"), i), v)
		if err != nil {
			return r, err
		}
		m := make(map[string]rl.TensorData, len(mo.m))
		for k, tv := range mo.m {
			if m[k], err = decodeTensor(mo.at(k), k, tv); err != nil {
				return r, err
			}
		}
		r.LossFnOutputs[i] = m
	}
	r.Metrics = map[string]float64{}
	if mo, found, err := o.object("metrics", false); err != nil {
		return r, err
	} else if found {
		if r.Metrics, err = floatMap(mo); err != nil {
			return r, err
		}
	}
	return r, nil
}

// OptimStepResponse is the result of an optim_step future.
type OptimStepResponse struct {
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// DecodeOptimStepResponse decodes an optim_step result.
func DecodeOptimStepResponse(b []byte) (OptimStepResponse, error) {
	var r OptimStepResponse
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if mo, found, err := o.object("metrics", false); err != nil {
		return r, err
	} else if found {
		r.Metrics, err = floatMap(mo)
		return r, err
	}
	return r, nil
}

// PathResponse is the result of save_weights ("save_weights"),
// load_weights ("load_weights") and save_weights_for_sampler
// ("save_weights_for_sampler"; then Path or SamplingSessionID is set).
type PathResponse struct {
	Path              string `json:"path,omitempty"`
	SamplingSessionID string `json:"sampling_session_id,omitempty"`
	Type              string `json:"type,omitempty"`
}

// DecodePathResponse decodes a save/load result; requirePath makes an
// absent path an error.
func DecodePathResponse(b []byte, requirePath bool) (PathResponse, error) {
	var r PathResponse
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if r.Path, err = o.str("path", requirePath); err != nil {
		return r, err
	}
	if r.SamplingSessionID, err = o.str("sampling_session_id", false); err != nil {
		return r, err
	}
	r.Type, err = o.str("type", false)
	return r, err
}

// SampledSequence is one completion of a SampleResponse.
type SampledSequence struct {
	StopReason rl.StopReason `json:"stop_reason"`
	Tokens     []int         `json:"tokens"`
	Logprobs   []float64     `json:"logprobs,omitempty"`
}

// SampleResponse is the result of an asample future. PromptLogprobs has
// one entry per prompt token, null for the first. PolicyVersion is a tandem
// extension (clients that do not know it ignore it): the adapter version
// that produced the sequences.
type SampleResponse struct {
	Sequences      []SampledSequence `json:"sequences"`
	Type           string            `json:"type"`
	PromptLogprobs []*float64        `json:"prompt_logprobs,omitempty"`
	// TopKPromptLogprobs (when asked for): per prompt position null or the
	// most likely tokens with their log-probs; see TopKEntry.
	TopKPromptLogprobs [][]TopKEntry `json:"topk_prompt_logprobs,omitempty"`
	PolicyVersion      *int64        `json:"policy_version,omitempty"`
}

// TopKToRL returns the top-k prompt log-probs in rl's form (nil when absent).
func (r SampleResponse) TopKToRL() [][]rl.TokenLogprob {
	if r.TopKPromptLogprobs == nil {
		return nil
	}
	return topKToRL(r.TopKPromptLogprobs)
}

// SampleResponseFromRL converts an rl result; withPrompt includes prompt
// log-probs (the first set to null, as the SDK expects).
func SampleResponseFromRL(out rl.SampleOutput, withPrompt bool) SampleResponse {
	r := SampleResponse{Type: "sample", Sequences: make([]SampledSequence, len(out.Sequences))}
	for i, s := range out.Sequences {
		r.Sequences[i] = SampledSequence{StopReason: s.StopReason, Tokens: orEmpty(s.Tokens), Logprobs: s.Logprobs}
	}
	if withPrompt {
		r.PromptLogprobs = make([]*float64, len(out.PromptLogprobs))
		for i := 1; i < len(out.PromptLogprobs); i++ {
			v := out.PromptLogprobs[i]
			r.PromptLogprobs[i] = &v
		}
	}
	if out.TopKPromptLogprobs != nil {
		r.TopKPromptLogprobs = topKFromRL(out.TopKPromptLogprobs)
	}
	v := int64(out.Version)
	r.PolicyVersion = &v
	return r
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// DecodeSampleResponse decodes an asample result.
func DecodeSampleResponse(b []byte) (SampleResponse, error) {
	r := SampleResponse{Type: "sample"}
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	l, _, err := o.list("sequences", true)
	if err != nil {
		return r, err
	}
	for i, v := range l {
		so, err := asObject(index(o.at("sequences"), i), v)
		if err != nil {
			return r, err
		}
		var s SampledSequence
		reason, err := so.str("stop_reason", true)
		if err != nil {
			return r, err
		}
		if reason != string(rl.StopLength) && reason != string(rl.StopStop) {
			return r, fieldErr(so.at("stop_reason"), "got %q, want \"length\" or \"stop\"", reason)
		}
		s.StopReason = rl.StopReason(reason)
		tl, _, err := so.numbers("tokens", true)
		if err != nil {
			return r, err
		}
		raw, err := ints(so.at("tokens"), tl)
		if err != nil {
			return r, err
		}
		s.Tokens = make([]int, len(raw))
		for j, t := range raw {
			if s.Tokens[j], err = tokenID(index(so.at("tokens"), j), t); err != nil {
				return r, err
			}
		}
		if ll, found, err := so.numbers("logprobs", false); err != nil {
			return r, err
		} else if found {
			if s.Logprobs, err = floats(so.at("logprobs"), ll); err != nil {
				return r, err
			}
		}
		r.Sequences = append(r.Sequences, s)
	}
	if pl, found, err := o.list("prompt_logprobs", false); err != nil {
		return r, err
	} else if found {
		r.PromptLogprobs = make([]*float64, len(pl))
		for i, v := range pl {
			if v == nil {
				continue
			}
			f, err := toFloat(index(o.at("prompt_logprobs"), i), v)
			if err != nil {
				return r, err
			}
			r.PromptLogprobs[i] = &f
		}
	}
	if tl, found, err := o.list("topk_prompt_logprobs", false); err != nil {
		return r, err
	} else if found {
		if r.TopKPromptLogprobs, err = decodeTopKJSON(o.at("topk_prompt_logprobs"), tl); err != nil {
			return r, err
		}
	}
	r.PolicyVersion, err = o.optInt("policy_version")
	return r, err
}

// TryAgainResponse is a retrieve_future answer for a call not done yet.
type TryAgainResponse struct {
	Type       string `json:"type"`
	RequestID  string `json:"request_id"`
	QueueState string `json:"queue_state"`
}

// Queue states of a TryAgainResponse.
const (
	QueueActive          = "active"
	QueuePausedCapacity  = "paused_capacity"
	QueuePausedRateLimit = "paused_rate_limit"
	TypeTryAgain         = "try_again"
	ErrorCategoryUser    = "user"
	ErrorCategoryServer  = "server"
	ErrorCategoryUnknown = "unknown"
)

// RequestFailedResponse is a retrieve_future answer for a failed call.
// Category is "user" (the request was wrong), "server" or "unknown".
type RequestFailedResponse struct {
	Error    string `json:"error"`
	Category string `json:"category"`
}

// ErrorResponse is the body of every non-2xx answer of tandem's server.
// Field, when set, names the offending request field.
type ErrorResponse struct {
	Error    string `json:"error"`
	Category string `json:"category"`
	Field    string `json:"field,omitempty"`
}

// FutureResult classifies a retrieve_future answer: exactly one of
// TryAgain, Failed or Result is set.
type FutureResult struct {
	TryAgain *TryAgainResponse
	Failed   *RequestFailedResponse
	Result   []byte // the call's own result, to decode with its Decode function
}

// DecodeFutureResult classifies a retrieve_future answer the way the SDK
// does (lib/api_future_impl.py): "type":"try_again" means poll again; an
// "error" key means the call failed (category "user", "server" or
// "unknown"; anything else counts as unknown); otherwise it is the result.
func DecodeFutureResult(b []byte) (FutureResult, error) {
	o, err := parseObject(b)
	if err != nil {
		return FutureResult{}, err
	}
	if t, _ := o.str("type", false); t == TypeTryAgain {
		r := &TryAgainResponse{Type: t}
		r.RequestID, _ = o.str("request_id", false)
		r.QueueState, _ = o.str("queue_state", false)
		return FutureResult{TryAgain: r}, nil
	}
	if v, ok := o.m["error"]; ok {
		msg, isStr := v.(string)
		if !isStr {
			msg = "request failed (error of unexpected shape)"
		}
		cat, _ := o.str("category", false)
		switch cat {
		case ErrorCategoryUser, ErrorCategoryServer:
		default:
			cat = ErrorCategoryUnknown
		}
		return FutureResult{Failed: &RequestFailedResponse{Error: msg, Category: cat}}, nil
	}
	return FutureResult{Result: b}, nil
}
