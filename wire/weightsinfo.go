package wire

// WeightsInfoRequest is POST /api/v1/weights_info (SDK ≥ 0.5.1): what a
// checkpoint is, so that create_training_client_from_state can make a model
// of the same shape before it loads the state.
type WeightsInfoRequest struct {
	TinkerPath TinkerPath `json:"tinker_path"`
}

// DecodeWeightsInfoRequest decodes and checks a weights_info body; the
// path may be tinker:// or bt://loops:.
func DecodeWeightsInfoRequest(b []byte) (WeightsInfoRequest, error) {
	var r WeightsInfoRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	s, err := o.str("tinker_path", true)
	if err != nil {
		return r, err
	}
	if r.TinkerPath, err = ParseTinkerPath(s); err != nil {
		return r, fieldErr(o.at("tinker_path"), "%v", err)
	}
	return r, nil
}

// WeightsInfoResponse answers weights_info: the base model and the LoRA
// settings the checkpoint was trained with.
type WeightsInfoResponse struct {
	BaseModel    string `json:"base_model"`
	IsLora       bool   `json:"is_lora"`
	LoraRank     int    `json:"lora_rank"`
	TrainUnembed bool   `json:"train_unembed"`
	TrainMLP     bool   `json:"train_mlp"`
	TrainAttn    bool   `json:"train_attn"`
}

// GetSamplerResponse answers GET /api/v1/samplers/{id} (SDK ≥ 0.5.1;
// SamplingClient.get_tokenizer and get_base_model): what a sampling
// session serves. ModelPath is nil for the base model.
type GetSamplerResponse struct {
	SamplerID string  `json:"sampler_id"`
	BaseModel string  `json:"base_model"`
	ModelPath *string `json:"model_path"`
}
