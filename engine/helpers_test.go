package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// tinyConfig is small enough for finite differences over many weights.
func tinyConfig() Config {
	return Config{Vocab: 13, Dim: 8, Layers: 2, Heads: 2, Hidden: 12, Context: 10}
}

// randomize fills every tensor of ts with values in ±scale from seed.
func randomizeAdapter[T Float](a *Adapter[T], seed uint64, scale float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, t := range a.tensors() {
		for i := range t.Data {
			t.Data[i] = T((2*rng.Float64() - 1) * scale)
		}
	}
}

// randomSeqs returns n sequences of random lengths in [1, maxLen] and their
// random targets.
func randomExamples(rng *rand.Rand, n, maxLen, vocab int) []Example {
	out := make([]Example, n)
	for i := range out {
		l := 1 + rng.IntN(maxLen)
		out[i].Input = make([]int, l)
		out[i].Targets = make([]int, l)
		for j := 0; j < l; j++ {
			out[i].Input[j] = rng.IntN(vocab)
			out[i].Targets[j] = rng.IntN(vocab)
		}
	}
	return out
}

// gradCheck compares the trainer's accumulated gradient of every parameter
// tensor with central finite differences of Forward's loss:sum at up to
// perTensor elements of each tensor, and returns the largest relative error
// per tensor name.
func gradCheck(t *testing.T, tr *Trainer[float64], data []Example, loss LossSpec, perTensor int) map[string]float64 {
	t.Helper()
	return gradCheckAgainst(t, tr, data, loss, data, loss, perTensor)
}

// gradCheckAgainst compares the gradient of (data, loss) with finite
// differences of (numData, numLoss): for a loss with a stop-gradient, the
// second is the surrogate whose plain gradient it must equal.
func gradCheckAgainst(t *testing.T, tr *Trainer[float64], data []Example, loss LossSpec, numData []Example, numLoss LossSpec, perTensor int) map[string]float64 {
	t.Helper()
	return gradCheckStep(t, tr, data, loss, numData, numLoss, perTensor, 1e-6)
}

// gradCheckStep is gradCheckAgainst with central differences of step h. A
// larger step (1e-5) suits models whose gradients go down to 1e-6, where the
// loss's rounding noise over 2·1e-6 would dominate.
func gradCheckStep(t *testing.T, tr *Trainer[float64], data []Example, loss LossSpec, numData []Example, numLoss LossSpec, perTensor int, h float64) map[string]float64 {
	t.Helper()
	ctx := context.Background()
	tr.ZeroGrad()
	_, err := tr.ForwardBackward(ctx, data, loss)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 7))
	worst := map[string]float64{}
	for _, p := range tr.ps {
		idx := rng.Perm(len(p.w))
		if len(idx) > perTensor {
			idx = idx[:perTensor]
		}
		for _, i := range idx {
			w0 := p.w[i]
			p.w[i] = w0 + h
			op, err := tr.Forward(ctx, numData, numLoss)
			require.NoError(t, err)
			p.w[i] = w0 - h
			om, err := tr.Forward(ctx, numData, numLoss)
			require.NoError(t, err)
			p.w[i] = w0
			num := (op.Metrics["loss:sum"] - om.Metrics["loss:sum"]) / (2 * h)
			ana := p.g[i]
			den := math.Max(math.Max(math.Abs(num), math.Abs(ana)), 1e-6)
			worst[p.name] = math.Max(worst[p.name], math.Abs(num-ana)/den)
		}
	}
	return worst
}
