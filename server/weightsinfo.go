package server

import (
	"context"
	"net/http"

	"github.com/tandemrl/tandem/wire"
)

// weightsInfo says what a checkpoint is — its base model and LoRA settings
// — so that the SDK's create_training_client_from_state can make a model
// of that shape before loading the state. The checkpoint's own settings
// come first (the backend reads them, when it can); else those of the live
// model that saved it.
func (s *Server) weightsInfo(ctx context.Context, owner string, body []byte) (any, error) {
	req, err := wire.DecodeWeightsInfoRequest(body)
	if err != nil {
		return nil, badRequest(err)
	}
	ck, err := s.resolve(ctx, owner, req.TinkerPath)
	if err != nil {
		return nil, err
	}
	var lora wire.LoraConfig
	if d, ok := s.be.(LoraDescriber); ok {
		if lora, err = d.DescribeLora(ctx, ck.Ref); err != nil {
			return nil, serverErr(http.StatusInternalServerError, "weights_info %s: read its LoRA settings: %v", req.TinkerPath, err)
		}
	} else if m, err := s.modelFor(owner, req.TinkerPath.Run); err == nil {
		lora = m.lora
	} else {
		return nil, userErr(http.StatusNotFound, "weights_info %s: the model that saved it is not loaded here, and this backend cannot read a checkpoint's LoRA settings", req.TinkerPath)
	}
	return wire.WeightsInfoResponse{BaseModel: ck.Base, IsLora: true, LoraRank: lora.Rank,
		TrainUnembed: lora.TrainUnembed, TrainMLP: lora.TrainMLP, TrainAttn: lora.TrainAttn}, nil
}
