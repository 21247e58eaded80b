package hf

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
)

// golden is testdata/<case>/golden.json, written by testdata/gen.py.
type golden struct {
	Case      string `json:"case"`
	DType     string `json:"dtype"`
	Sequences []struct {
		Tokens   []int     `json:"tokens"`
		Logprobs []float64 `json:"logprobs"`
	} `json:"sequences"`
}

// goldenCases are the folders under testdata that gen.py writes.
var goldenCases = []string{
	"llama-plain", "llama", "llama-tied-bias", "qwen2", "qwen3",
	"qwen3-bf16-sharded", "qwen3-v5", "llama-yarn", "mistral-f16",
}

func readGolden(t *testing.T, name string) golden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name, "golden.json"))
	require.NoError(t, err)
	var g golden
	require.NoError(t, json.Unmarshal(data, &g))
	require.Equal(t, name, g.Case)
	require.NotEmpty(t, g.Sequences)
	return g
}

// goldenTolerance is the largest |Δ log-prob| accepted against the float64
// reference: 1e-4 for exactly stored weights (F32, and F16, which the
// reference uses rounded), 2e-3 for BF16.
func goldenTolerance(dtype string) float64 {
	if dtype == "BF16" {
		return 2e-3
	}
	return 1e-4
}

// TestGoldenLogprobs loads every golden checkpoint and compares the
// engine's per-token log-probs with the torch float64 transcription of
// Hugging Face's modeling code (testdata/gen.py).
func TestGoldenLogprobs(t *testing.T) {
	t.Parallel()
	for _, name := range goldenCases {
		t.Run(name+"/float32", func(t *testing.T) {
			t.Parallel()
			checkGolden[float32](t, name)
		})
		t.Run(name+"/float64", func(t *testing.T) {
			t.Parallel()
			checkGolden[float64](t, name)
		})
		dtype := readGolden(t, name).DType
		if dtype == "BF16" {
			t.Run(name+"/bf16-matrices", func(t *testing.T) {
				t.Parallel()
				checkGolden[float32](t, name, WithBF16Matrices())
			})
		}
		if dtype == "BF16" || dtype == "F16" {
			t.Run(name+"/stored-matrices", func(t *testing.T) {
				t.Parallel()
				checkGolden[float32](t, name, WithStoredMatrices())
			})
			t.Run(name+"/stored-matrices/float64", func(t *testing.T) {
				t.Parallel()
				checkGolden[float64](t, name, WithStoredMatrices())
			})
		}
	}
}

func checkGolden[T engine.Float](t *testing.T, name string, opts ...Option) {
	defer func() {
		// An engine without the case's features may panic; report it as
		// this case's failure so the other cases still run.
		if r := recover(); r != nil {
			t.Fatalf("%s: the engine panicked: %v", name, r)
		}
	}()
	g := readGolden(t, name)
	m, info, err := Load[T](filepath.Join("testdata", name), opts...)
	require.NoError(t, err)
	defer m.Close()
	if len(opts) > 0 {
		require.Equal(t, g.DType == "BF16", info.MatricesBF16, "a BF16 checkpoint keeps its matrices in bfloat16")
		require.Equal(t, g.DType == "F16", info.MatricesF16, "an F16 checkpoint keeps its matrices in half precision")
		require.Positive(t, info.MappedBytes, "views of the mapped files")
	}
	tr, err := engine.NewTrainer(m, engine.LoraConfig{Rank: 1, TrainAttn: true}, engine.TrainerOptions{})
	require.NoError(t, err)
	var data []engine.Example
	for _, s := range g.Sequences {
		n := len(s.Tokens)
		require.Len(t, s.Logprobs, n-1)
		data = append(data, engine.Example{Input: s.Tokens[:n-1], Targets: s.Tokens[1:]})
	}
	got, err := tr.BaseLogprobs(context.Background(), data)
	require.NoError(t, err)
	tol := goldenTolerance(g.DType)
	worst, at := 0.0, 0
	for i, s := range g.Sequences {
		require.Len(t, got[i], len(s.Logprobs))
		for j, want := range s.Logprobs {
			if d := math.Abs(got[i][j] - want); !(d <= worst) {
				worst, at = d, j
			}
		}
	}
	assert.LessOrEqual(t, worst, tol, "%s: max |Δ log-prob| %.3g at position %d (tolerance %.0e)", name, worst, at, tol)
	t.Logf("%s (%T, bfloat16 matrices %v, float16 matrices %v): max |Δ log-prob| %.3g at position %d", name, T(0), m.IsBF16(), m.IsF16(), worst, at)
}
