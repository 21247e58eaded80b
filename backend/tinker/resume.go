package tinker

import (
	"context"
	"fmt"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/wire"
)

// WeightsInfo asks the server what the checkpoint at path (a tinker:// or
// bt://loops: weights path) is: its base model and LoRA settings (POST
// weights_info, SDK ≥ 0.5.1).
func (c *Client) WeightsInfo(ctx context.Context, path string) (wire.WeightsInfoResponse, error) {
	if _, err := wire.ParseTinkerPath(path); err != nil {
		return wire.WeightsInfoResponse{}, err
	}
	req := struct {
		TinkerPath string `json:"tinker_path"`
	}{path}
	b, err := c.postJSON(ctx, "/api/v1/weights_info", req, nil)
	if err != nil {
		return wire.WeightsInfoResponse{}, fmt.Errorf("tinker: weights_info %s: %w", path, err)
	}
	r, err := wire.DecodeWeightsInfoResponse(b)
	if err != nil {
		return wire.WeightsInfoResponse{}, fmt.Errorf("tinker: weights_info %s answer: %w", path, err)
	}
	return r, nil
}

// ResumeTrainer makes a trainer from the state saved at ref (as the SDK's
// create_training_client_from_state and …_with_optimizer do): it asks
// weights_info for the checkpoint's base model and LoRA settings, creates
// a model of that shape and loads the state into it, with the optimizer's
// when withOptimizer. The trainer's version becomes ref.Version (a path
// alone carries no version; set it when you know it).
func (c *Client) ResumeTrainer(ctx context.Context, ref policy.Ref, withOptimizer bool) (*Trainer, error) {
	info, err := c.WeightsInfo(ctx, ref.URI)
	if err != nil {
		return nil, err
	}
	if !info.IsLora {
		return nil, fmt.Errorf("tinker: resume from %s: not a LoRA checkpoint; only LoRA runs can be resumed", ref.URI)
	}
	lora := wire.LoraConfig{Rank: info.LoraRank, TrainUnembed: info.TrainUnembed, TrainMLP: info.TrainMLP, TrainAttn: info.TrainAttn}
	t, err := c.NewTrainer(ctx, info.BaseModel, lora)
	if err != nil {
		return nil, fmt.Errorf("tinker: resume from %s: %w", ref.URI, err)
	}
	if _, err := t.LoadState(ctx, ref, withOptimizer).Wait(ctx); err != nil {
		return nil, fmt.Errorf("tinker: resume from %s: load state: %w", ref.URI, err)
	}
	return t, nil
}
