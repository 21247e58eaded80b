package train

import (
	"fmt"
	"slices"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/hf"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tasks/arithmetic"
	"github.com/tandemrl/tandem/tokenizer"
)

// model is the job's base model and how the task is written for it.
type model struct {
	base *engine.Model[float32]
	name string            // recorded as the base of every checkpoint
	w    arithmetic.Writer // prompts and completions
	chat bool              // w renders chats: the reward's format term is ChatFormat
	// decodePrompt is the text of prompt tokens (for reward plugins).
	decodePrompt func([]int) string
	// tokenText is one token's text, for the samplers' stop strings (nil:
	// the shipped character vocabulary's).
	tokenText func(id int) string
	// stopTokens and stopStrings replace the sampling stops of the config
	// for a chat model (its renderer's and its EOS ids); nil keeps them.
	stopTokens  []int
	stopStrings []string
}

// loadModel loads the job's base: a Hugging Face folder (cfg.Model), the
// task written as a chat by its renderer; a weights file (cfg.BaseModel);
// or the shipped model, both written in characters.
func loadModel(cfg Config) (*model, error) {
	if cfg.Model == "" {
		m, err := loadBase(cfg.BaseModel)
		if err != nil {
			return nil, err
		}
		return &model{base: m, name: basemodel.Name, w: arithmetic.Char{}, decodePrompt: arithmetic.Decode}, nil
	}
	// WeightsStored: a BF16 or F16 checkpoint keeps its matrices in that
	// format, memory-mapped; WeightsFloat32 widens them.
	var opts []hf.Option
	if cfg.Weights != WeightsFloat32 {
		opts = append(opts, hf.WithStoredMatrices())
	}
	m, info, err := hf.Load[float32](cfg.Model, opts...)
	if err != nil {
		return nil, err
	}
	if cfg.Activations == ActivationsBFloat16 {
		if !m.IsBF16() {
			m.Close()
			return nil, fmt.Errorf("activations %q needs a checkpoint whose matrices are all stored in BF16; %s stores %v", cfg.Activations, cfg.Model, info.WeightDTypes)
		}
		m.BF16.RoundActivations = true
	}
	if info.TokenizerPath == "" {
		return nil, fmt.Errorf("%s has no tokenizer.json: a chat task needs the model's tokenizer", cfg.Model)
	}
	tok, err := tokenizer.Load(cfg.Model)
	if err != nil {
		return nil, err
	}
	name := cfg.Renderer
	if name == "" {
		name = chat.DefaultName(tok.Config())
	}
	r, err := chat.New(name, tok, tok.Config())
	if err != nil {
		return nil, fmt.Errorf("renderer: %w", err)
	}
	stops := slices.Clone(r.StopTokens())
	for _, e := range info.EOS {
		if !slices.Contains(stops, e) {
			stops = append(stops, e)
		}
	}
	decode := func(ids []int) string { s, _ := tok.Decode(ids, true); return s }
	return &model{base: m, name: info.Name, w: arithmetic.Chat{R: r}, chat: true, decodePrompt: decode,
		tokenText: tok.TokenText, stopTokens: stops, stopStrings: r.StopStrings()}, nil
}

// sampling returns p with the model's stops.
func (m *model) sampling(p rl.SamplingParams) rl.SamplingParams {
	if m.stopTokens != nil {
		p.StopTokens, p.StopStrings = m.stopTokens, m.stopStrings
	}
	return p
}
