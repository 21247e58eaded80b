package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

func runPretrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("pretrain", stderr)
	def := basemodel.DefaultPretrainConfig()
	out := fs.String("out", "basemodel/base.safetensors", "where to write the model (F16 safetensors; a .recipe.json is written beside it)")
	threads := fs.Int("threads", runtime.NumCPU(), "goroutines per engine call (does not change the result)")
	steps := fs.Int("steps", def.Steps, "optimizer steps")
	seed := fs.Uint64("seed", def.Seed, "seed of the weights and the corpus")
	batch := fs.Int("batch", def.Batch, "corpus lines per step")
	lr := fs.Float64("lr", def.LR, "peak learning rate")
	every := fs.Int("log-every", 50, "print the loss every this many steps")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg := def
	cfg.Steps, cfg.Seed, cfg.Batch, cfg.LR = *steps, *seed, *batch, *lr
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	fmt.Fprintf(stdout, "pretraining %d params for %d steps of %d lines on %d threads\n", cfg.Model.Params(), cfg.Steps, cfg.Batch, *threads)
	var tail []float64
	start := time.Now()
	model, err := basemodel.Pretrain(ctx, cfg, *threads, func(r basemodel.StepReport) {
		tail = append(tail, r.Loss)
		if len(tail) > 100 {
			tail = tail[1:]
		}
		if r.Step%*every == 0 || r.Step == cfg.Steps-1 {
			fmt.Fprintf(stdout, "step %5d  loss %.4f  lr %.2e  %s\n", r.Step, r.Loss, r.LR, r.Elapsed.Round(time.Second))
		}
	})
	if err != nil {
		return err
	}
	rec := basemodel.Recipe{Name: basemodel.Name, Pretrain: cfg, Params: model.NumParams(), Seconds: time.Since(start).Seconds(), Threads: *threads}
	for _, l := range tail {
		rec.FinalLoss += l / float64(len(tail))
	}
	// Evaluate what was saved: the F16 round trip.
	if err := basemodel.Save(*out, model, rec); err != nil {
		return err
	}
	saved, err := engine.LoadBase[float32](*out)
	if err != nil {
		return err
	}
	_, held := arithmetic.Split()
	for _, temp := range []float64{1, 0} {
		acc, err := evalBase(ctx, saved, held, temp, *threads)
		if err != nil {
			return err
		}
		if temp == 1 {
			rec.HeldOutAccuracyT1 = acc
		} else {
			rec.HeldOutAccuracyGreedy = acc
		}
	}
	sum, err := fileSHA256(*out)
	if err != nil {
		return err
	}
	rec.SHA256 = sum
	if err := basemodel.Save(*out, model, rec); err != nil {
		return err
	}
	b, _ := json.Marshal(rec)
	fmt.Fprintln(stdout, string(b))
	return nil
}

func evalBase(ctx context.Context, m *engine.Model[float32], problems []arithmetic.Problem, temp float64, threads int) (float64, error) {
	s, err := local.NewSampler(m, local.SamplerOptions{Threads: threads})
	if err != nil {
		return 0, err
	}
	res, err := arithmetic.Evaluate(ctx, s, problems,
		rl.SamplingParams{MaxTokens: 24, Temperature: temp, StopTokens: []int{engine.Newline, engine.EOS}}, 1, 1)
	return res.Accuracy, err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
