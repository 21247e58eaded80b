package algo

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// randomGroups makes single- and multi-turn groups with observations of
// zero to two chunks, some past the short-datum path, actions of one to 40
// tokens, returns with ties, and uniform groups.
func randomGroups(rng *rand.Rand) []rl.Group {
	groups := make([]rl.Group, 1+rng.IntN(4))
	for gi := range groups {
		trajs := make([]rl.Trajectory, 1+rng.IntN(4))
		for ti := range trajs {
			turns := make([]rl.Transition, 1+rng.IntN(2))
			for k := range turns {
				var chunks []rl.Chunk
				for range rng.IntN(3) {
					toks := make([]int, rng.IntN(4))
					if rng.IntN(4) == 0 {
						toks = make([]int, rng.IntN(2*shortDatum)) // past the short-datum path
					}
					for i := range toks {
						toks[i] = rng.IntN(90)
					}
					chunks = append(chunks, rl.Chunk{Tokens: toks})
				}
				act := make([]int, 1+rng.IntN(5))
				if rng.IntN(4) == 0 {
					act = make([]int, 1+rng.IntN(40))
				}
				lps := make([]float64, len(act))
				for i := range act {
					act[i], lps[i] = rng.IntN(90), -rng.Float64()*3
				}
				turns[k] = rl.Transition{Observation: rl.ModelInput{Chunks: chunks}, Action: act, Logprobs: lps, Reward: float64(rng.IntN(2))}
			}
			trajs[ti] = rl.Trajectory{Transitions: turns}
		}
		groups[gi] = rl.Group{ID: uint64(gi), Trajectories: trajs}
	}
	return groups
}

// wantDatum is a datum as the naive reference builds it.
type wantDatum struct {
	toks    []int
	tg      []int64
	lp, adv []float64
	span    rl.Span
}

// naiveDatum builds a transition's datum position by position.
func naiveDatum(tr rl.Transition, adv float64) wantDatum {
	full := append(tr.Observation.AllTokens(), tr.Action...)
	obs := tr.Observation.Len()
	n := len(full) - 1
	w := wantDatum{toks: full[:n], tg: make([]int64, n), lp: make([]float64, n), adv: make([]float64, n)}
	w.span.Start, w.span.End = n, n
	for p := range n {
		w.tg[p] = int64(full[p+1])
		if a := p + 1 - obs; a >= 0 { // target p is action token a
			w.lp[p], w.adv[p] = tr.Logprobs[a], adv
			w.span.Start = min(w.span.Start, p)
		}
	}
	return w
}

// fakeLogprob is the log-prob the fake base model and the fake trainer give
// position p of a datum whose target there is tg: a function of the two
// only, so that the reference can recompute it.
func fakeLogprob(tg int64, p int) float64 { return -0.25*float64(tg%9) - 0.01*float64(p%5) }

func fakeLogprobs(d rl.Datum) []float64 {
	tg := d.LossFnInputs[rl.InputTargetTokens].Ints
	out := make([]float64, len(tg))
	for p, t := range tg {
		out[p] = fakeLogprob(t, p)
	}
	return out
}

// fakeBase is a BaseModel scoring with fakeLogprob.
type fakeBase struct{}

func (fakeBase) BaseLogprobs(_ context.Context, data []rl.Datum) ([][]float64, error) {
	out := make([][]float64, len(data))
	for i, d := range data {
		out[i] = fakeLogprobs(d)
	}
	return out, nil
}

// fakeForward is a trainer whose forward pass scores with fakeLogprob (the
// decoupled objective's π_prox); it counts its calls.
type fakeForward struct {
	rl.Trainer
	calls int
}

func (f *fakeForward) Forward(_ context.Context, data []rl.Datum, _ rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	f.calls++
	return rl.Resolved(fakeOutput(data, 0), nil)
}

// fakeOutput is a forward pass scoring with fakeLogprob plus shift.
func fakeOutput(data []rl.Datum, shift float64) rl.ForwardBackwardOutput {
	out := rl.ForwardBackwardOutput{LossFnOutputs: make([]map[string]rl.TensorData, len(data))}
	for i, d := range data {
		lp := fakeLogprobs(d)
		for p := range lp {
			lp[p] += shift
		}
		out.LossFnOutputs[i] = map[string]rl.TensorData{rl.InputLogprobs: rl.FloatTensor(lp)}
	}
	return out
}

// naiveBatch is the reference for GRPO's Batch under cfg: the datums of the
// kept groups' transitions, each built position by position; with the KL
// penalty, shaped by tinker-cookbook's formula against fakeLogprob; for
// decoupled, "logprobs" := π_prox = fakeLogprob and each advantage A·w,
// w = π_prox/μ, or 0 past the cap. It returns the datums, the number of
// uniform groups, whether all groups were kept, the advantage statistics
// over action tokens before decoupled's weights, and Σ|μ − π_prox|.
func naiveBatch(cfg Config, groups []rl.Group) (ws []wantDatum, uniform int, keepAll bool, stats map[string]float64, gap float64) {
	cfg = cfg.WithDefaults()
	advs := make([][]float64, len(groups))
	same := make([]bool, len(groups))
	for gi, grp := range groups {
		rets := make([]float64, len(grp.Trajectories))
		for i, tr := range grp.Trajectories {
			rets[i] = tr.Return()
		}
		advs[gi], same[gi] = naiveAdvantages(rets, cfg.NormalizeStd)
		if same[gi] {
			uniform++
		}
	}
	keepAll = cfg.KeepUniform || uniform == len(groups)
	for gi, grp := range groups {
		if same[gi] && !keepAll {
			continue
		}
		for i, tr := range grp.Trajectories {
			for _, x := range tr.Transitions {
				if x.Observation.Len()+len(x.Action) < 2 {
					continue
				}
				w := naiveDatum(x, advs[gi][i])
				w.span.Datum = len(ws)
				ws = append(ws, w)
			}
		}
	}
	if cfg.KLCoef > 0 && len(ws) > 0 {
		var mu, base, mask [][]float64
		for _, w := range ws {
			b, m := make([]float64, len(w.tg)), make([]float64, len(w.tg))
			for p := range w.tg {
				b[p] = fakeLogprob(w.tg[p], p)
				if p >= w.span.Start {
					m[p] = 1
				}
			}
			mu, base, mask = append(mu, w.lp), append(base, b), append(mask, m)
		}
		kl, _ := tinkerKL(mu, base, mask, cfg.KLCoef, cfg.KLDiscount)
		for i, w := range ws {
			for p := w.span.Start; p < w.span.End; p++ {
				w.adv[p] += kl[i][p]
			}
		}
	}
	stats = map[string]float64{}
	var all []float64
	for _, w := range ws {
		all = append(all, w.adv[w.span.Start:w.span.End]...)
	}
	if len(all) > 0 {
		n := float64(len(all))
		stats["advantage:min"], stats["advantage:max"] = all[0], all[0]
		for _, a := range all {
			stats["advantage:mean"] += a / n
			stats["advantage:abs_mean"] += math.Abs(a) / n
			stats["advantage:min"] = min(stats["advantage:min"], a)
			stats["advantage:max"] = max(stats["advantage:max"], a)
		}
		var sq float64
		for _, a := range all {
			sq += (a - stats["advantage:mean"]) * (a - stats["advantage:mean"]) / n
		}
		stats["advantage:std"] = math.Sqrt(sq)
		stats["tokens:action"] = n
	}
	if cfg.Objective == Decoupled {
		for _, w := range ws {
			for p := w.span.Start; p < w.span.End; p++ {
				prox := fakeLogprob(w.tg[p], p)
				wt := math.Exp(prox - w.lp[p])
				gap += math.Abs(w.lp[p] - prox)
				w.lp[p] = prox
				if cfg.BehaviourCap > 0 && wt > cfg.BehaviourCap {
					w.adv[p] = 0
				} else {
					w.adv[p] *= wt
				}
			}
		}
	}
	return ws, uniform, keepAll, stats, gap
}

// TestBatchDatumsMatchNaive compares GRPO's datum builder with the naive
// reference over random multi-turn groups (long and multi-chunk
// observations included), for every objective, with and without the KL
// penalty, reusing one GRPO across calls so that the memory reused from the
// batch before (grown, shrunk, moved) is exercised; and checks that
// RatioMetrics reads the batch just built.
func TestBatchDatumsMatchNaive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, cfg := range []Config{
		{}, {NormalizeStd: true}, {KeepUniform: true}, {Objective: PPO}, {Objective: TIS},
		{KLCoef: 0.3}, {Objective: PPO, KLCoef: 0.2, KLDiscount: 0.9, NormalizeStd: true},
		{Objective: Decoupled}, {Objective: Decoupled, KLCoef: 0.1, BehaviourCap: -1},
	} {
		var base BaseModel
		if cfg.KLCoef > 0 {
			base = fakeBase{}
		}
		g, err := New(cfg, base)
		require.NoError(t, err)
		tr := &fakeForward{}
		rng := rand.New(rand.NewPCG(5, 6))
		for it := range 200 {
			groups := randomGroups(rng)
			prepared := cfg.Objective == Decoupled && it%3 == 0
			if prepared {
				require.NoError(t, g.Prepare(ctx, tr, 0, groups))
			}
			calls := tr.calls
			b, err := g.Batch(ctx, tr, 0, groups)
			require.NoError(t, err)
			assert.Equal(t, g.Loss(), b.Loss)

			ws, uniform, keepAll, stats, gap := naiveBatch(cfg, groups)
			require.Len(t, b.Datums, len(ws), "%+v iteration %d", cfg, it)
			for i, w := range ws {
				d := b.Datums[i]
				require.Equal(t, w.toks, d.ModelInput.AllTokens(), "datum %d tokens", i)
				require.Equal(t, w.tg, d.LossFnInputs[rl.InputTargetTokens].Ints, "datum %d targets", i)
				require.InDeltaSlice(t, w.lp, d.LossFnInputs[rl.InputLogprobs].Floats, 1e-12, "datum %d logprobs", i)
				require.InDeltaSlice(t, w.adv, d.LossFnInputs[rl.InputAdvantages].Floats, 1e-9, "datum %d advantages", i)
				require.Len(t, d.LossFnInputs, 3)
				for _, td := range d.LossFnInputs {
					require.NoError(t, td.Validate())
				}
			}
			if cfg.Objective == Decoupled {
				assert.Empty(t, b.Actions, "the logprobs inputs are π_prox, not sampler log-probs")
				tokens := 0
				for _, w := range ws {
					tokens += w.span.End - w.span.Start
				}
				assert.Equal(t, tokens, b.GapTokens)
				assert.InDelta(t, gap, b.GapSum, 1e-9)
				if prepared {
					assert.Equal(t, calls, tr.calls, "Prepare's forward pass serves the batch")
					assert.Equal(t, 1.0, b.Metrics["decoupled:prepared"])
				} else if len(ws) > 0 {
					assert.Equal(t, calls+1, tr.calls, "one forward pass per batch")
					assert.NotContains(t, b.Metrics, "decoupled:prepared")
				}
			} else {
				require.Len(t, b.Actions, len(ws))
				for i, w := range ws {
					assert.Equal(t, w.span, b.Actions[i], "datum %d span", i)
				}
			}
			assert.Equal(t, float64(uniform), b.Metrics["groups:uniform"])
			if keepAll {
				assert.Equal(t, 0.0, b.Metrics["groups:filtered_uniform"])
				assert.Equal(t, float64(len(groups)), b.Metrics["groups:kept"])
			} else {
				assert.Equal(t, float64(uniform), b.Metrics["groups:filtered_uniform"])
				assert.Equal(t, float64(len(groups)-uniform), b.Metrics["groups:kept"])
			}
			assert.Equal(t, uniform == len(groups) && !cfg.KeepUniform, b.Metrics["groups:all_uniform"] == 1)
			assert.Equal(t, cfg.KLCoef > 0 && len(ws) > 0, b.Metrics["kl:policy_base"] != 0)
			for k, v := range stats {
				assert.InDelta(t, v, b.Metrics[k], 1e-9, "%s", k)
			}
			if len(stats) == 0 {
				assert.NotContains(t, b.Metrics, "advantage:mean")
			}

			checkRatioMetrics(t, g, b, ws)
		}
	}
}

// checkRatioMetrics compares RatioMetrics over a made-up trainer output
// with the reference datums ws.
func checkRatioMetrics(t *testing.T, g *GRPO, b rl.Batch, ws []wantDatum) {
	t.Helper()
	const shift = 0.3 // the trainer's log-prob, off the "logprobs" input by about this much
	out := fakeOutput(b.Datums, shift)
	rm, err := g.RatioMetrics(out)
	require.NoError(t, err)
	c := g.Config()
	var sum, rmax float64
	var n, acted int
	for i, w := range ws {
		p := out.LossFnOutputs[i][rl.InputLogprobs].Floats
		for k := w.span.Start; k < w.span.End; k++ {
			r := math.Exp(p[k] - w.lp[k])
			sum, rmax, n = sum+r, max(rmax, r), n+1
			switch c.Objective {
			case PPO, Decoupled:
				if (w.adv[k] > 0 && r > 1+c.ClipEpsHigh) || (w.adv[k] < 0 && r < 1-c.ClipEpsLow) {
					acted++
				}
			case TIS:
				if r > c.TruncateAt {
					acted++
				}
			}
		}
	}
	if n == 0 {
		assert.Empty(t, rm)
		return
	}
	assert.InDelta(t, sum/float64(n), rm["ratio:mean"], 1e-9)
	assert.InDelta(t, rmax, rm["ratio:max"], 1e-9)
	switch c.Objective {
	case PPO, Decoupled:
		assert.InDelta(t, float64(acted)/float64(n), rm["ratio:clipped_frac"], 1e-12)
	case TIS:
		assert.InDelta(t, float64(acted)/float64(n), rm["ratio:truncated_frac"], 1e-12)
	}
}

func TestRatioMetricsOutputShape(t *testing.T) {
	t.Parallel()
	g, err := New(Config{}, nil)
	require.NoError(t, err)
	tr := func(r float64) rl.Trajectory {
		return rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens([]int{1, 2}), Action: []int{3}, Logprobs: []float64{-1}, Reward: r}}}
	}
	b, err := g.Batch(context.Background(), nil, 0, []rl.Group{{Trajectories: []rl.Trajectory{tr(0), tr(1)}}})
	require.NoError(t, err)
	require.Len(t, b.Datums, 2)

	rm, err := g.RatioMetrics(rl.ForwardBackwardOutput{})
	require.NoError(t, err, "a trainer that reports no per-token outputs")
	assert.Empty(t, rm)
	_, err = g.RatioMetrics(fakeOutput(b.Datums[:1], 0))
	require.ErrorContains(t, err, "1 outputs for a batch of 2 datums")
	short := fakeOutput(b.Datums, 0)
	short.LossFnOutputs[1][rl.InputLogprobs] = rl.FloatTensor([]float64{-1})
	_, err = g.RatioMetrics(short)
	require.ErrorContains(t, err, "datum 1 has 1 output log-probs for 2 positions")
}

// TestBatchReusesMemory: once a batch of one shape has been built, building
// the next of the same shape allocates nothing, for the objectives whose
// datums are exactly what the builder writes. Not parallel: AllocsPerRun
// counts the whole process's allocations, and a sequential top-level test
// runs while the parallel ones wait.
func TestBatchReusesMemory(t *testing.T) {
	groups := smallGroups()
	for _, obj := range []Objective{Naive, PPO, TIS} {
		g, err := New(Config{Objective: obj}, nil)
		require.NoError(t, err)
		_, err = g.Batch(context.Background(), nil, 0, groups)
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(10, func() {
			if _, err := g.Batch(context.Background(), nil, 0, groups); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "%s: allocations per batch", obj)
	}
}
