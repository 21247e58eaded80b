package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/hf"
	"github.com/tandemrl/tandem/engine/safetensors"
)

// runExport is `tandem export -hf DIR`: the shipped base model (or a -base
// file) as a Hugging Face Llama folder that `-model DIR` and transformers
// load back.
func runExport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export", stderr)
	dir := fs.String("hf", "", "folder to write the Hugging Face model into (config.json, generation_config.json, model.safetensors, tokenizer.json); required")
	base := fs.String("base", "", "base weights file (default: the shipped model)")
	dtype := fs.String("dtype", "f32", "dtype of the stored weights: f32 (exact), bf16 or f16 (half the size, rounded; a weight past f16's ±65504 is an error)")
	name := fs.String("name", "", "_name_or_path written in config.json (default: "+basemodel.Name+" or the -base file's name)")
	force := fs.Bool("force", false, "write into -hf even if it already holds a config.json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("export: -hf DIR is required")
	}
	dt := map[string]safetensors.DType{"f32": safetensors.F32, "bf16": safetensors.BF16, "f16": safetensors.F16}[strings.ToLower(*dtype)]
	if dt == "" {
		return usagef("export: -dtype %q: want f32, bf16 or f16", *dtype)
	}
	if _, err := os.Stat(filepath.Join(*dir, "config.json")); err == nil && !*force {
		return usagef("export: %s already holds a model (config.json); pass -force to overwrite it", *dir)
	}
	var (
		m   *engine.Model[float32]
		err error
	)
	if *base == "" {
		m, err = basemodel.Load()
		if *name == "" {
			*name = basemodel.Name
		}
	} else {
		m, err = engine.LoadBase[float32](*base)
		if *name == "" {
			*name = strings.TrimSuffix(filepath.Base(*base), filepath.Ext(*base))
		}
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	tj, tc := basemodel.TokenizerFiles()
	if m.Config.Vocab != engine.VocabSize {
		tj, tc = nil, nil // not the character vocabulary: no tokenizer to write
	}
	if err := hf.Save(*dir, m, hf.SaveOptions{DType: dt, Name: *name, TokenizerJSON: tj, TokenizerConfigJSON: tc}); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s (%s, %d parameters, %s) — load it with: tandem sample -model %s -raw -prompt \"What is 12 + 35?\"\n", *dir, *name, m.NumParams(), dt, *dir)
	return nil
}
