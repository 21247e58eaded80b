// Package basemodel ships tandem's pretrained embedded model: a 1.07 M
// parameter transformer (engine.DefaultConfig) that has learned the
// arithmetic corpus of package pretrain, stored in the repository as
// arith.safetensors (BF16, 2.1 MB) and embedded in the binary.
//
// # How it was made
//
// pretrain.Run(ctx, pretrain.DefaultOptions(), …) followed by
// engine.SaveBase(path, model, "BF16"): seed 1, 800 steps of 128 corpus lines
// (~2,500 tokens each), AdamW with peak learning rate 3e-3, 80 warm-up steps
// and cosine decay to 3e-4, weight decay 0.01, gradient clipping at 1, 10 %
// of corpus answers wrong on purpose. The run is deterministic: the same
// code and kernels (see pretrain.Report.Kernels) give the same file, bit for
// bit, for any thread count. TestShippedReproduces (run with
// TANDEM_REPRODUCE_BASE=1) regenerates it and compares bytes.
//
// Figures of the run (kernels avx512-12x32, 2,007,805 training tokens):
// final loss 0.581 nats per token (mean over the last 80 steps; the corpus's
// own entropy — random operands, 10 % noise — keeps it well above 0), greedy
// exact-answer accuracy 36 % on 200 held-out problems before rounding to
// BF16 (TestShippedAnswers measures the shipped file).
package basemodel

import (
	_ "embed"

	"github.com/tandemrl/tandem/engine"
)

//go:embed arith.safetensors
var arith []byte

// Name is the base model's name, as a Tinker-compatible server reports it.
const Name = "tandem/arith-1m"

// Load decodes the shipped model. Each call returns a new copy.
func Load() (*engine.Model[float32], error) { return engine.ParseBase[float32](arith) }

// Bytes returns the shipped safetensors file. The caller must not modify it.
func Bytes() []byte { return arith }
