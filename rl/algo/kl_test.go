package algo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// tinkerKL is tinker-cookbook's incorporate_kl_penalty written out over
// whole datums with a 0/1 mask: diff = (μ − base)·mask, avg over the mask,
// kl_adv = β·mask·(avg − diff), discounted over every position when γ > 0.
func tinkerKL(mu, base, mask [][]float64, beta, gamma float64) (klAdv [][]float64, avg float64) {
	var sum, n float64
	for i := range mu {
		for k := range mu[i] {
			sum += (mu[i][k] - base[i][k]) * mask[i][k]
			n += mask[i][k]
		}
	}
	avg = sum / n
	for i := range mu {
		row := make([]float64, len(mu[i]))
		for k := range row {
			row[k] = beta * mask[i][k] * (avg - (mu[i][k]-base[i][k])*mask[i][k])
		}
		if gamma > 0 {
			for k := range row {
				s, f := 0.0, 1.0
				for j := k; j < len(row); j++ {
					s += f * row[j]
					f *= gamma
				}
				row[k] = s
			}
		}
		klAdv = append(klAdv, row)
	}
	return klAdv, avg
}

func TestKLShapeMatchesTinker(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		groups := randomGroups(rng)
		g, err := New(Config{KeepUniform: true}, nil)
		require.NoError(t, err)
		require.NoError(t, g.units(groups, map[string]float64{}))
		units := g.last
		if len(units) == 0 {
			continue
		}
		var mu, base, mask, adv0 [][]float64
		for _, u := range units {
			b := make([]float64, len(u.mu))
			m := make([]float64, len(u.mu))
			for k := range b {
				b[k] = -rng.Float64() * 4
				if k >= u.start && k < u.end {
					m[k] = 1
				}
			}
			mu, base, mask = append(mu, u.mu), append(base, b), append(mask, m)
			adv0 = append(adv0, append([]float64(nil), u.adv...))
		}
		beta := rng.Float64()
		gamma := 0.0
		if rng.IntN(2) == 0 {
			gamma = rng.Float64()
		}
		want, avg := tinkerKL(mu, base, mask, beta, gamma)
		v1, v2, err := klShape(units, base, beta, gamma)
		require.NoError(t, err)
		assert.InDelta(t, avg, v1, 1e-12)
		var sq, n float64
		for i, u := range units {
			for k := range u.adv {
				if mask[i][k] == 0 {
					// tinker-cookbook's discounted sum leaks into the
					// prompt positions before the action; tandem keeps
					// non-action advantages at zero.
					assert.Equal(t, adv0[i][k], u.adv[k], "datum %d position %d is not an action", i, k)
					continue
				}
				d := mu[i][k] - base[i][k]
				sq += d * d
				n++
				assert.InDelta(t, adv0[i][k]+want[i][k], u.adv[k], 1e-9, "datum %d position %d", i, k)
			}
		}
		assert.InDelta(t, 0.5*sq/n, v2, 1e-12)
	}
}

func TestKLShapeErrors(t *testing.T) {
	t.Parallel()
	u := unit{mu: []float64{-1, -2}, adv: []float64{0, 1}, start: 1, end: 2}
	_, _, err := klShape([]unit{u}, nil, 0.1, 0)
	require.ErrorContains(t, err, "scored 0 datums; want 1")
	_, _, err = klShape([]unit{u}, [][]float64{{-1}}, 0.1, 0)
	require.ErrorContains(t, err, "1 log-probs for datum 0 of 2 positions")
}

// promptSampler is an rl.Sampler whose prompt log-probs are a function of
// the prompt's tokens (−token/100 for each after the first). gate, when set,
// runs inside each call before it answers; calls and the peak number in
// flight are counted.
type promptSampler struct {
	version policy.Version
	gate    func(ctx context.Context, prompt []int) error

	mu              sync.Mutex
	calls, in, peak int
}

func (s *promptSampler) Sample(ctx context.Context, prompt rl.ModelInput, _ int, p rl.SamplingParams) (rl.SampleOutput, error) {
	s.mu.Lock()
	s.calls++
	s.in++
	s.peak = max(s.peak, s.in)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.in--
		s.mu.Unlock()
	}()
	toks := prompt.AllTokens()
	if s.gate != nil {
		if err := s.gate(ctx, toks); err != nil {
			return rl.SampleOutput{}, err
		}
	}
	if !p.PromptLogprobs || p.MaxTokens != 1 {
		return rl.SampleOutput{}, fmt.Errorf("want prompt log-probs and one token, got %+v", p)
	}
	return rl.SampleOutput{PromptLogprobs: promptLogprobs(toks), Version: s.version}, nil
}

func (*promptSampler) Load(context.Context, policy.Ref) error { return nil }

func promptLogprobs(toks []int) []float64 {
	lp := make([]float64, len(toks))
	for i := 1; i < len(toks); i++ {
		lp[i] = -float64(toks[i]) / 100
	}
	return lp
}

// baseData makes n datums whose first input token is their index.
func baseData(n int) []rl.Datum {
	data := make([]rl.Datum, n)
	for i := range data {
		in := []int{i, 10 + i, 20 + i}
		data[i] = rl.Datum{ModelInput: rl.Tokens(in),
			LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{10 + i, 20 + i, 30 + i})}}
	}
	return data
}

// TestSamplerBaseBoundAndOrder: at most Parallel calls run at once, the
// bound is reached, and each datum gets its own sequence's log-probs.
func TestSamplerBaseBoundAndOrder(t *testing.T) {
	t.Parallel()
	const par, n = 3, 10
	full, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := &promptSampler{}
	s.gate = func(ctx context.Context, _ []int) error {
		s.mu.Lock()
		if s.in == par {
			once.Do(func() { close(full) })
		}
		s.mu.Unlock()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	go func() {
		<-full // par calls in flight: let them all go
		close(release)
	}()
	out, err := SamplerBase{Sampler: s, Parallel: par}.BaseLogprobs(context.Background(), baseData(n))
	require.NoError(t, err)
	assert.Equal(t, n, s.calls)
	assert.Equal(t, par, s.peak, "the bound is reached and never passed")
	require.Len(t, out, n)
	for i, lp := range out {
		// The sequence is input ++ last target; position p scores token p+1.
		assert.Equal(t, promptLogprobs([]int{i, 10 + i, 20 + i, 30 + i})[1:], lp, "datum %d", i)
	}
}

// TestSamplerBaseFirstErrorCancels: the first failing datum's error is
// returned; the call still running is cancelled and no later call starts.
func TestSamplerBaseFirstErrorCancels(t *testing.T) {
	t.Parallel()
	errDown := errors.New("sampler down")
	running := make(chan struct{})
	s := &promptSampler{}
	s.gate = func(ctx context.Context, prompt []int) error {
		if prompt[0] == 0 {
			<-running // fail while datum 1 is in flight
			return errDown
		}
		close(running) // only datum 1 gets here
		<-ctx.Done()   // and waits until the failure cancels it
		return context.Cause(ctx)
	}
	_, err := SamplerBase{Sampler: s, Parallel: 2}.BaseLogprobs(context.Background(), baseData(6))
	require.ErrorIs(t, err, errDown)
	assert.EqualError(t, err, "algo: base log-probs: datum 0: sampler down")
	assert.Equal(t, 2, s.calls, "datums 0 and 1 ran; none started after the failure")
}

func TestSamplerBaseErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := SamplerBase{Sampler: &promptSampler{version: 3}}.BaseLogprobs(ctx, baseData(2))
	require.ErrorIs(t, err, ErrNotBase)
	assert.ErrorContains(t, err, "datum 0: algo: sampler does not serve the base model: it serves version 3")

	bad := baseData(2)
	bad[1].LossFnInputs[rl.InputTargetTokens] = rl.IntTensor([]int{1})
	_, err = SamplerBase{Sampler: &promptSampler{}, Parallel: 4}.BaseLogprobs(ctx, bad)
	require.ErrorContains(t, err, "datum 1: 1 target tokens for 3 input tokens")

	cancelled, cancel := context.WithCancelCause(ctx)
	stop := errors.New("operator stop")
	cancel(stop)
	s := &promptSampler{}
	_, err = SamplerBase{Sampler: s}.BaseLogprobs(cancelled, baseData(3))
	require.ErrorIs(t, err, stop)
	assert.Zero(t, s.calls, "nothing is sampled once ctx has ended")

	out, err := SamplerBase{Sampler: s}.BaseLogprobs(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, out)
}
