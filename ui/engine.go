package ui

import (
	"context"
	"errors"
	"fmt"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// EngineSampler is the playground's default Sampler: the embedded engine,
// in process, on the run's base model (config.json's base_model weights
// file, else the shipped model) with the chosen checkpoint's adapter, the
// prompt encoded as the arithmetic task writes it (BOS, then its
// characters) and completions stopped at a newline, as `tandem sample`
// does. Runs of a Hugging Face model folder (config.json's model) are not
// served: `tandem sample -model` samples them.
//
// Each call loads the base and the adapter afresh (a few milliseconds for
// the shipped model), so nothing is held between requests.
type EngineSampler struct {
	// Threads is the cores one sample uses (0: the engine's default).
	Threads int
}

// Sample implements Sampler.
func (e EngineSampler) Sample(ctx context.Context, req SampleRequest) ([]Completion, error) {
	s, err := e.sampler(req)
	if err != nil {
		return nil, err
	}
	// A sampler that owns a scheduler goroutine ends it on Close; the
	// check keeps this file building against engines without one.
	if c, ok := any(s).(interface{ Close() error }); ok {
		defer c.Close()
	}
	ids, err := arithmetic.EncodePrompt(req.Prompt)
	if err != nil {
		return nil, fmt.Errorf("%w: prompt: %w", ErrBadSample, err)
	}
	p := engine.SamplingParams{MaxTokens: req.MaxTokens, Temperature: req.Temperature, Seed: req.Seed,
		StopTokens: []int{engine.Newline, engine.EOS}}
	seqs, _, err := s.Sample(ctx, ids, req.N, p)
	if errors.Is(err, engine.ErrInput) {
		return nil, fmt.Errorf("%w: %w", ErrBadSample, err)
	}
	if err != nil {
		return nil, fmt.Errorf("ui: sample: %w", err)
	}
	out := make([]Completion, len(seqs))
	for i, sq := range seqs {
		lp := 0.0
		for _, x := range sq.Logprobs {
			lp += x
		}
		out[i] = Completion{Text: arithmetic.Decode(sq.Tokens), Tokens: len(sq.Tokens), Logprob: lp, StopReason: string(sq.StopReason)}
	}
	return out, nil
}

// sampler loads the run's base and the request's adapter.
func (e EngineSampler) sampler(req SampleRequest) (*engine.Sampler[float32], error) {
	if m, _ := req.Config["model"].(string); m != "" {
		return nil, fmt.Errorf("%w: this run trained the Hugging Face model folder %s; the playground serves the embedded arithmetic model only (use tandem sample -model)", ErrBadSample, m)
	}
	var (
		m   *engine.Model[float32]
		err error
	)
	if path, _ := req.Config["base_model"].(string); path != "" {
		m, err = engine.LoadBase[float32](path)
	} else {
		m, err = basemodel.Load()
	}
	if err != nil {
		return nil, fmt.Errorf("ui: base model: %w", err)
	}
	s, err := engine.NewSampler(m, engine.SamplerOptions{Threads: e.Threads})
	if err != nil {
		return nil, fmt.Errorf("ui: sampler: %w", err)
	}
	if req.Adapter != "" {
		if err := s.LoadAdapter(req.Adapter); err != nil {
			return nil, fmt.Errorf("%w: checkpoint %s does not load as an adapter of this run's base: %w", ErrBadSample, req.Checkpoint, err)
		}
	}
	return s, nil
}
