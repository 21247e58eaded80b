package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/tandemrl/tandem/backend/openai"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tokenizer"
)

// deployResult is what deploy prints, as one JSON line.
type deployResult struct {
	Adapter     string  `json:"adapter"`      // the folder validated and registered
	ServerPath  string  `json:"server_path"`  // the path the server was told
	Server      string  `json:"server"`       // the URL
	Kind        string  `json:"kind"`         // vllm, sglang or tandem
	Name        string  `json:"name"`         // the adapter's name on the server
	Version     int64   `json:"version"`      // the checkpoint's policy version
	ProbeTokens int     `json:"probe_tokens"` // prompt tokens compared
	MaxGap      float64 `json:"max_gap"`      // |server − trainer| log-prob, largest
	MeanGap     float64 `json:"mean_gap"`
}

// runDeploy is `tandem deploy`: validate a checkpoint's PEFT adapter
// against the target's loading rules, register it on an OpenAI-compatible
// server (vLLM, SGLang, or tandem serve's surface) under its own name,
// and probe it: the server's log-probs of a fixed sequence next to the
// trainer's (the engine's, with the adapter, here), gap printed.
func runDeploy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("deploy", stderr)
	ckpt := fs.String("checkpoint", "", "the adapter: a PEFT folder, or a tinker:// sampler checkpoint URI in -store (required)")
	storeDir := fs.String("store", "", "checkpoint store that a -checkpoint URI refers to")
	to := fs.String("to", "", "the server's URL, e.g. http://10.0.0.5:8000 (required)")
	kind := fs.String("kind", "tandem", "the server: vllm, sglang or tandem (tandem serve's OpenAI surface)")
	apiKey := fs.String("api-key", "", "the server's API key (default $"+EnvAPIKey+")")
	name := fs.String("name", "", "the adapter's name on the server (default <run>-v<version>)")
	serverPath := fs.String("server-path", "", "the folder's path as the server sees it (default its local absolute path: a shared file system)")
	base := fs.String("base", "", "base weights file the adapter adapts (default: the shipped model)")
	modelFolder := fs.String("model", "", "a Hugging Face folder the adapter adapts, instead of -base")
	baseName := fs.String("base-name", "", "the base model's name on the server (default "+basemodel.Name+", or the -model folder's name)")
	probe := fs.String("probe", "What is 12 + 35? 47\n", "text whose log-probs are compared (encoded with the base's tokenizer)")
	maxGap := fs.Float64("max-gap", 1e-2, "largest log-prob gap accepted (bf16 servers differ from the f32 trainer by about 1e-2)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *ckpt == "" || *to == "":
		return usagef("deploy: -checkpoint and -to are required")
	case *kind != "vllm" && *kind != "sglang" && *kind != "tandem":
		return usagef("deploy: -kind %q: want vllm, sglang or tandem", *kind)
	case *base != "" && *modelFolder != "":
		return usagef("deploy: -base and -model both name the base; give one")
	}
	if *apiKey == "" {
		*apiKey = os.Getenv(EnvAPIKey)
	}
	dir, err := adapterDir(*ckpt, *storeDir)
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	ref := policy.Ref{URI: dir, Version: 1, Run: "tandem"}
	if u, err := checkpoint.ParseURI(*ckpt); err == nil && u.Scheme != checkpoint.SchemeLocal {
		st, err := checkpoint.Open(*storeDir)
		if err != nil {
			return err
		}
		ck, err := st.Resolve(*ckpt)
		if err != nil {
			return err
		}
		ref.Version, ref.Run = ck.Version, ck.Run
	}

	// The base, its tokenizer, and the adapter on it (shapes checked).
	var (
		m   *engine.Model[float32]
		tok *tokenizer.Tokenizer
	)
	served := *baseName
	if *modelFolder != "" {
		md, err := loadModelDir(*modelFolder, 0)
		if err != nil {
			return err
		}
		m, tok = md.model, md.tok
		if served == "" {
			served = md.info.Name
		}
	} else {
		if *base == "" {
			m, err = basemodel.Load()
		} else {
			m, err = engine.LoadBase[float32](*base)
		}
		if err != nil {
			return err
		}
		if tok, err = basemodel.Tokenizer(); err != nil {
			return err
		}
		if served == "" {
			served = basemodel.Name
		}
	}
	ad, err := engine.LoadAdapter[float32](dir, m.Config)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	if *kind != "tandem" {
		if bad := engine.VLLMProblems(dir, m.Config); len(bad) > 0 {
			return fmt.Errorf("deploy: %s will not load %s:\n  %s", *kind, dir, strings.Join(bad, "\n  "))
		}
	}

	// Register it, under its own name.
	dialect := openai.VLLM
	if *kind == "sglang" {
		dialect = openai.SGLang
	}
	res := deployResult{Adapter: dir, ServerPath: dir, Server: *to, Kind: *kind, Version: int64(ref.Version)}
	if *serverPath != "" {
		res.ServerPath = *serverPath
	}
	opts := openai.Options{BaseURL: *to, APIKey: *apiKey, Dialect: dialect, Model: served,
		PathRewrite: func(string) (string, error) { return res.ServerPath, nil }}
	if *name != "" {
		opts.AdapterName = func(policy.Ref) string { return *name }
	}
	res.Name = openai.DefaultAdapterName(ref)
	if opts.AdapterName != nil {
		res.Name = opts.AdapterName(ref)
	}
	srv, err := openai.New(ctx, opts)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	if err := srv.Load(ctx, ref); err != nil {
		return fmt.Errorf("deploy: register %s on %s: %w", dir, *to, err)
	}

	// Probe: the server's prompt log-probs of the probe text next to the
	// engine's with the same adapter.
	ids := tok.Encode(*probe, tokenizer.EncodeOptions{AddSpecialTokens: true})
	if len(ids) < 2 {
		return usagef("deploy: -probe %q encodes to %d tokens; want at least 2", *probe, len(ids))
	}
	out, err := srv.Sample(ctx, rl.Tokens(ids), 1, rl.SamplingParams{MaxTokens: 1, Temperature: 1, PromptLogprobs: true})
	if err != nil {
		return fmt.Errorf("deploy: probe: %w", err)
	}
	local, err := engine.NewSampler(m, engine.SamplerOptions{})
	if err != nil {
		return err
	}
	if err := local.SetAdapter(ad); err != nil {
		return err
	}
	want, err := local.ComputeLogprobs(ctx, ids)
	if err != nil {
		return err
	}
	if len(out.PromptLogprobs) != len(ids) {
		return fmt.Errorf("deploy: probe: the server answered %d prompt log-probs for %d tokens", len(out.PromptLogprobs), len(ids))
	}
	for i := 1; i < len(ids); i++ {
		g := math.Abs(out.PromptLogprobs[i] - want[i])
		res.MaxGap = max(res.MaxGap, g)
		res.MeanGap += g / float64(len(ids)-1)
	}
	res.ProbeTokens = len(ids) - 1
	b, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(b))
	if res.MaxGap > *maxGap {
		return fmt.Errorf("deploy: %s serves %s, but its log-probs differ from the trainer's by up to %.3g (more than -max-gap %g): is it the same base model and dtype?", *to, res.Name, res.MaxGap, *maxGap)
	}
	return nil
}
