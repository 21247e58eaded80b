package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

func runSample(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sample", stderr)
	prompt := fs.String("prompt", "What is 12 + 35?", "text to complete (BOS is prepended)")
	ckpt := fs.String("checkpoint", "", "adapter to serve: a checkpoint folder, a PEFT adapter folder, or a tinker:// URI in -store (default: the base model alone)")
	storeDir := fs.String("store", "", "checkpoint store that -checkpoint URIs refer to")
	base := fs.String("base", "", "base weights file (default: the shipped model)")
	modelFolder := fs.String("model", "", "a Hugging Face model folder (config.json, safetensors, tokenizer.json) to sample instead of the shipped model")
	raw := fs.Bool("raw", false, "with -model: encode -prompt as is, without the chat renderer")
	rendererName := fs.String("renderer", "", "with -model: chat renderer ("+strings.Join(chat.Names(), ", ")+"; default: the folder's chat template, else role_colon)")
	n := fs.Int("n", 4, "number of samples")
	temp := fs.Float64("temperature", 1, "sampling temperature (0 = greedy)")
	topK := fs.Int("top-k", 0, "keep only the k most likely tokens (0 = all)")
	topP := fs.Float64("top-p", 0, "nucleus sampling mass (0 or 1 = all)")
	maxTok := fs.Int("max-tokens", 24, "longest completion")
	seed := fs.Int64("seed", 1, "random seed (same seed, same output)")
	stopNL := fs.Bool("stop-newline", true, "stop at a newline")
	threads := fs.Int("threads", runtime.NumCPU(), "cores to use")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	t0 := time.Now()
	if *modelFolder != "" {
		if *base != "" {
			return usagef("sample: -model and -base both name a base model; give one")
		}
		return sampleModelDir(ctx, stdout, sampleDirArgs{
			dir: *modelFolder, prompt: *prompt, raw: *raw, renderer: *rendererName, ckpt: *ckpt, store: *storeDir,
			n: *n, threads: *threads, json: *asJSON, t0: t0,
			p: engine.SamplingParams{MaxTokens: *maxTok, Temperature: *temp, TopK: *topK, TopP: *topP, Seed: *seed},
		})
	}
	var (
		m   *engine.Model[float32]
		err error
	)
	if *base == "" {
		m, err = basemodel.Load()
	} else {
		m, err = engine.LoadBase[float32](*base)
	}
	if err != nil {
		return err
	}
	s, err := engine.NewSampler(m, engine.SamplerOptions{Threads: *threads})
	if err != nil {
		return err
	}
	served := "base model " + basemodel.Name
	if *ckpt != "" {
		dir, err := adapterDir(*ckpt, *storeDir)
		if err != nil {
			return err
		}
		if err := s.LoadAdapter(dir); err != nil {
			return err
		}
		served = dir
	}
	// The prompt as the task writes it: BOS, then its characters.
	ids, err := arithmetic.EncodePrompt(*prompt)
	if err != nil {
		return usagef("prompt: %v", err)
	}
	p := engine.SamplingParams{MaxTokens: *maxTok, Temperature: *temp, TopK: *topK, TopP: *topP, Seed: *seed}
	if *stopNL {
		p.StopTokens = []int{engine.Newline, engine.EOS}
	}
	seqs, _, err := s.Sample(ctx, ids, *n, p)
	if err != nil {
		return err
	}
	elapsed := time.Since(t0)
	type out struct {
		Text       string  `json:"text"`
		Logprob    float64 `json:"logprob"`
		StopReason string  `json:"stop_reason"`
	}
	res := struct {
		Prompt  string  `json:"prompt"`
		Served  string  `json:"served"`
		Samples []out   `json:"samples"`
		Seconds float64 `json:"seconds"`
	}{Prompt: *prompt, Served: served, Seconds: elapsed.Seconds()}
	for _, sq := range seqs {
		lp := 0.0
		for _, x := range sq.Logprobs {
			lp += x
		}
		res.Samples = append(res.Samples, out{Text: arithmetic.Decode(sq.Tokens), Logprob: lp, StopReason: string(sq.StopReason)})
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "%s  (%s)\n", *prompt, served)
	for i, o := range res.Samples {
		fmt.Fprintf(stdout, "  %d: %q  p=%.3f  [%s]\n", i+1, o.Text, math.Exp(o.Logprob), o.StopReason)
	}
	fmt.Fprintf(stdout, "%d samples in %s\n", len(seqs), elapsed.Round(time.Millisecond))
	return nil
}

// adapterDir resolves -checkpoint: a folder as is, or a URI in a store.
func adapterDir(ref, storeDir string) (string, error) {
	u, err := checkpoint.ParseURI(ref)
	if err != nil {
		return "", usagef("-checkpoint: %v", err)
	}
	if u.Scheme == checkpoint.SchemeLocal {
		return u.Path, nil
	}
	if storeDir == "" {
		return "", usagef("-checkpoint %s is a URI: say which checkpoint store with -store", ref)
	}
	st, err := checkpoint.Open(storeDir)
	if err != nil {
		return "", err
	}
	ck, err := st.Resolve(ref)
	if err != nil {
		return "", err
	}
	return ck.Dir, nil
}
