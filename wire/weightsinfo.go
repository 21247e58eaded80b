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

// DecodeWeightsInfoResponse decodes a weights_info answer as the SDK does
// (WeightsInfoResponse): base_model is required; train_unembed, train_mlp
// and train_attn absent or null mean true, as create_training_client_from_state
// reads them; a LoRA checkpoint must give its rank.
func DecodeWeightsInfoResponse(b []byte) (WeightsInfoResponse, error) {
	var r WeightsInfoResponse
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	if r.BaseModel, err = o.str("base_model", true); err != nil {
		return r, err
	}
	if r.BaseModel == "" {
		return r, fieldErr(o.at("base_model"), "empty")
	}
	if r.IsLora, err = o.boolean("is_lora", false); err != nil {
		return r, err
	}
	rank, err := o.integer("lora_rank", 0, false)
	if err != nil {
		return r, err
	}
	if r.IsLora && (rank < 1 || rank > MaxLoraRank) {
		return r, fieldErr(o.at("lora_rank"), "%d; a LoRA checkpoint needs a rank in [1, %d]", rank, MaxLoraRank)
	}
	r.LoraRank = int(rank)
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"train_unembed", &r.TrainUnembed}, {"train_mlp", &r.TrainMLP}, {"train_attn", &r.TrainAttn}} {
		if *f.dst, err = o.boolean(f.name, true); err != nil {
			return r, err
		}
	}
	return r, nil
}
