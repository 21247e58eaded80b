package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/hf"
	"github.com/tandemrl/tandem/tokenizer"
)

// modelDir is a Hugging Face model folder loaded for a command.
type modelDir struct {
	dir   string // absolute
	model *engine.Model[float32]
	info  *hf.Info
	tok   *tokenizer.Tokenizer // nil when the folder has no tokenizer.json
}

// loadModelDir loads the folder dir (config.json, weights, tokenizer.json),
// capping the engine context at maxContext (0: hf.DefaultMaxContext). A
// checkpoint stored in BF16 or F16 keeps its matrices in that format,
// memory-mapped (hf.WithStoredMatrices).
func loadModelDir(dir string, maxContext int) (*modelDir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	opts := []hf.Option{hf.WithStoredMatrices()}
	if maxContext > 0 {
		opts = append(opts, hf.WithMaxContext(maxContext))
	}
	m, info, err := hf.Load[float32](abs, opts...)
	if err != nil {
		return nil, err
	}
	md := &modelDir{dir: abs, model: m, info: info}
	if info.TokenizerPath != "" {
		if md.tok, err = tokenizer.Load(abs); err != nil {
			return nil, err
		}
		if n := md.tok.VocabSize(); n > m.Config.Vocab {
			return nil, fmt.Errorf("%s: tokenizer.json has %d tokens but the model's vocab_size is %d", abs, n, m.Config.Vocab)
		}
	}
	return md, nil
}

// renderer returns the chat renderer called name for the model, or, for
// "", the folder's own chat template (tokenizer_config.json) when it has
// one and role_colon otherwise.
func (md *modelDir) renderer(name string) (chat.Renderer, error) {
	if md.tok == nil {
		return nil, fmt.Errorf("%s has no tokenizer.json: rendering a chat needs one", md.dir)
	}
	cfg := md.tok.Config()
	if name == "" {
		name = chat.DefaultName(cfg)
	}
	return chat.New(name, md.tok, cfg)
}

type sampleDirArgs struct {
	dir, prompt, renderer, ckpt, store string
	raw, json                          bool
	n, threads                         int
	p                                  engine.SamplingParams
	t0                                 time.Time
}

// sampleModelDir is `tandem sample -model DIR`: the prompt rendered as a
// user turn by the model's chat renderer (or encoded as is with -raw),
// sampled until the renderer's stop tokens or the model's EOS ids.
func sampleModelDir(ctx context.Context, stdout io.Writer, a sampleDirArgs) error {
	md, err := loadModelDir(a.dir, 0)
	if err != nil {
		return err
	}
	if md.tok == nil {
		return usagef("sample: %s has no tokenizer.json, so -prompt cannot be encoded", md.dir)
	}
	var (
		ids   []int
		stops = append([]int(nil), md.info.EOS...)
		r     chat.Renderer
	)
	if a.raw {
		ids = md.tok.Encode(a.prompt, tokenizer.EncodeOptions{AddSpecialTokens: true})
	} else {
		if r, err = md.renderer(a.renderer); err != nil {
			return usagef("sample: %v", err)
		}
		if ids, err = r.GenerationPrompt([]chat.Message{{Role: "user", Content: a.prompt}}, ""); err != nil {
			return fmt.Errorf("sample: render the prompt: %w", err)
		}
		stops = append(r.StopTokens(), stops...)
		a.p.StopStrings = r.StopStrings()
	}
	if len(ids) == 0 {
		return usagef("sample: -prompt encodes to no tokens")
	}
	a.p.StopTokens = stops
	if free := md.model.Config.Context - len(ids); a.p.MaxTokens > free {
		a.p.MaxTokens = max(free, 0)
	}
	s, err := engine.NewSampler(md.model, engine.SamplerOptions{Threads: a.threads, TokenText: md.tok.TokenText})
	if err != nil {
		return err
	}
	served := "base model " + md.info.Name
	if a.ckpt != "" {
		dir, err := adapterDir(a.ckpt, a.store)
		if err != nil {
			return err
		}
		if err := s.LoadAdapter(dir); err != nil {
			return err
		}
		served = dir
	}
	seqs, _, err := s.Sample(ctx, ids, a.n, a.p)
	if err != nil {
		return err
	}
	elapsed := time.Since(a.t0)
	type out struct {
		Text       string  `json:"text"`
		Tokens     []int   `json:"tokens"`
		Logprob    float64 `json:"logprob"`
		StopReason string  `json:"stop_reason"`
	}
	res := struct {
		Prompt       string  `json:"prompt"`
		PromptTokens []int   `json:"prompt_tokens"`
		Served       string  `json:"served"`
		Renderer     string  `json:"renderer,omitempty"`
		Samples      []out   `json:"samples"`
		Seconds      float64 `json:"seconds"`
	}{Prompt: a.prompt, PromptTokens: ids, Served: served, Seconds: elapsed.Seconds()}
	if r != nil {
		res.Renderer = r.Name()
	}
	for _, sq := range seqs {
		lp := 0.0
		for _, x := range sq.Logprobs {
			lp += x
		}
		text, err := md.tok.Decode(sq.Tokens, true)
		if err != nil {
			return fmt.Errorf("sample: decode: %w", err)
		}
		res.Samples = append(res.Samples, out{Text: text, Tokens: sq.Tokens, Logprob: lp, StopReason: string(sq.StopReason)})
	}
	if a.json {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "%s  (%s, %s)\n", a.prompt, served, cmp.Or(res.Renderer, "raw"))
	for i, o := range res.Samples {
		fmt.Fprintf(stdout, "  %d: %q  logprob %.3f  [%s]\n", i+1, o.Text, o.Logprob, o.StopReason)
	}
	fmt.Fprintf(stdout, "%d samples in %s\n", len(seqs), elapsed.Round(time.Millisecond))
	return nil
}
