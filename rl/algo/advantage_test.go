package algo

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// naiveAdvantages is the textbook formula, written out.
func naiveAdvantages(rets []float64, norm bool) ([]float64, bool) {
	n := float64(len(rets))
	mean := 0.0
	for _, r := range rets {
		mean += r / n
	}
	vari := 0.0
	for _, r := range rets {
		vari += (r - mean) * (r - mean) / n
	}
	out := make([]float64, len(rets))
	same := true
	for i, r := range rets {
		same = same && r == rets[0]
		out[i] = r - mean
		if norm {
			out[i] /= math.Sqrt(vari) + 1e-6
		}
	}
	if same {
		clear(out)
	}
	return out, same
}

func TestGroupAdvantagesMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var buf []float64
	for range 500 {
		rets := make([]float64, 1+rng.IntN(8))
		for i := range rets {
			rets[i] = float64(rng.IntN(3)) * 0.5 // many ties and uniform groups
		}
		for _, norm := range []bool{false, true} {
			want, wantU := naiveAdvantages(rets, norm)
			var got []float64
			var u bool
			got, u = GroupAdvantages(buf, rets, norm)
			buf = got
			assert.Equal(t, wantU, u, "returns %v", rets)
			assert.InDeltaSlice(t, want, got, 1e-9, "returns %v norm %v", rets, norm)
			if !u {
				var s float64
				for _, a := range got {
					s += a
				}
				assert.InDelta(t, 0, s, 1e-9, "advantages of a group sum to zero")
			}
		}
	}
	adv, u := GroupAdvantages(nil, nil, true)
	assert.True(t, u)
	assert.Empty(t, adv)
}

// randomGroups makes single- and multi-turn groups with chunked
// observations, returns with ties, and uniform groups.
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
					for i := range toks {
						toks[i] = rng.IntN(90)
					}
					chunks = append(chunks, rl.Chunk{Tokens: toks})
				}
				act := make([]int, 1+rng.IntN(5))
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

// naiveDatum builds a transition's datum position by position.
func naiveDatum(tr rl.Transition, adv float64) (tokens []int, targets []int64, lps, advs []float64, span rl.Span) {
	full := append(tr.Observation.AllTokens(), tr.Action...)
	obs := tr.Observation.Len()
	n := len(full) - 1
	targets = make([]int64, n)
	lps = make([]float64, n)
	advs = make([]float64, n)
	span.Start, span.End = n, n
	for p := range n {
		targets[p] = int64(full[p+1])
		if a := p + 1 - obs; a >= 0 {
			lps[p], advs[p] = tr.Logprobs[a], adv
			span.Start = min(span.Start, p)
		}
	}
	return full[:n], targets, lps, advs, span
}

func TestBatchDatumsMatchNaive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, cfg := range []Config{{}, {NormalizeStd: true}, {KeepUniform: true}, {Objective: PPO}, {Objective: TIS}} {
		g, err := New(cfg, nil)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(5, 6))
		for range 200 {
			groups := randomGroups(rng)
			b, err := g.Batch(ctx, nil, 0, groups)
			require.NoError(t, err)
			assert.Equal(t, g.Loss(), b.Loss)

			type want struct {
				toks    []int
				tg      []int64
				lp, adv []float64
				span    rl.Span
			}
			var ws []want
			uniform := 0
			for _, grp := range groups {
				rets := make([]float64, len(grp.Trajectories))
				for i, tr := range grp.Trajectories {
					rets[i] = tr.Return()
				}
				adv, u := naiveAdvantages(rets, cfg.NormalizeStd)
				if u {
					uniform++
				}
				_ = adv
			}
			keepAll := cfg.KeepUniform || uniform == len(groups)
			for _, grp := range groups {
				rets := make([]float64, len(grp.Trajectories))
				for i, tr := range grp.Trajectories {
					rets[i] = tr.Return()
				}
				adv, u := naiveAdvantages(rets, cfg.NormalizeStd)
				if u && !keepAll {
					continue
				}
				for i, tr := range grp.Trajectories {
					for _, x := range tr.Transitions {
						if x.Observation.Len()+len(x.Action) < 2 {
							continue
						}
						var w want
						w.toks, w.tg, w.lp, w.adv, w.span = naiveDatum(x, adv[i])
						w.span.Datum = len(ws)
						ws = append(ws, w)
					}
				}
			}
			require.Len(t, b.Datums, len(ws))
			require.Len(t, b.Actions, len(ws))
			for i, w := range ws {
				d := b.Datums[i]
				assert.Equal(t, w.toks, d.ModelInput.AllTokens(), "datum %d tokens", i)
				assert.Equal(t, w.tg, d.LossFnInputs[rl.InputTargetTokens].Ints, "datum %d targets", i)
				assert.Equal(t, w.lp, d.LossFnInputs[rl.InputLogprobs].Floats, "datum %d logprobs", i)
				assert.InDeltaSlice(t, w.adv, d.LossFnInputs[rl.InputAdvantages].Floats, 1e-9, "datum %d advantages", i)
				assert.Equal(t, w.span, b.Actions[i], "datum %d span", i)
				for _, td := range d.LossFnInputs {
					require.NoError(t, td.Validate())
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
		}
	}
}

func TestBatchAdvantageMetrics(t *testing.T) {
	t.Parallel()
	tr := func(r float64, n int) rl.Trajectory {
		act := make([]int, n)
		return rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens([]int{1, 2}), Action: act, Logprobs: make([]float64, n), Reward: r}}}
	}
	g, err := New(Config{}, nil)
	require.NoError(t, err)
	// Group 1: returns 0 and 1 → advantages ∓0.5 on 1 and 3 action tokens.
	// Group 2: uniform, filtered.
	b, err := g.Batch(context.Background(), nil, 0, []rl.Group{
		{Trajectories: []rl.Trajectory{tr(0, 1), tr(1, 3)}},
		{Trajectories: []rl.Trajectory{tr(1, 2), tr(1, 2)}},
	})
	require.NoError(t, err)
	require.Len(t, b.Datums, 2)
	advs := []float64{-0.5, 0.5, 0.5, 0.5}
	var mean, sq, abs float64
	for _, a := range advs {
		mean += a / 4
		abs += math.Abs(a) / 4
	}
	for _, a := range advs {
		sq += (a - mean) * (a - mean) / 4
	}
	assert.InDelta(t, mean, b.Metrics["advantage:mean"], 1e-12)
	assert.InDelta(t, abs, b.Metrics["advantage:abs_mean"], 1e-12)
	assert.InDelta(t, math.Sqrt(sq), b.Metrics["advantage:std"], 1e-12)
	assert.Equal(t, -0.5, b.Metrics["advantage:min"])
	assert.Equal(t, 0.5, b.Metrics["advantage:max"])
	assert.Equal(t, 4.0, b.Metrics["tokens:action"])
	assert.Equal(t, 1.0, b.Metrics["groups:filtered_uniform"])
}

func TestBatchErrors(t *testing.T) {
	t.Parallel()
	g, err := New(Config{}, nil)
	require.NoError(t, err)
	good := rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens([]int{1}), Action: []int{2}, Logprobs: []float64{-1}}}}
	bad := rl.Trajectory{Transitions: []rl.Transition{{Observation: rl.Tokens([]int{1}), Action: []int{2, 3}, Logprobs: []float64{-1}, Reward: 1}}}
	_, err = g.Batch(context.Background(), nil, 0, []rl.Group{{ID: 7, Trajectories: []rl.Trajectory{good, bad}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "group 0 (id 7) trajectory 1 turn 0: 2 action tokens but 1 logprobs")

	dec, err := New(Config{Objective: Decoupled}, nil)
	require.NoError(t, err)
	good.Transitions[0].Reward = 1
	bad.Transitions[0].Logprobs = []float64{-1, -1}
	_, err = dec.Batch(context.Background(), nil, 0, []rl.Group{{Trajectories: []rl.Trajectory{good, bad, {}}}})
	require.ErrorContains(t, err, "needs the trainer")

	_, err = New(Config{KLCoef: 0.1}, nil)
	require.ErrorIs(t, err, ErrNoBaseModel)

	b, err := g.Batch(context.Background(), nil, 0, nil)
	require.NoError(t, err)
	assert.Empty(t, b.Datums)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Config{}.Validate())
	assert.Equal(t, Config{Objective: Naive, ClipEpsLow: 0.2, ClipEpsHigh: 0.2, TruncateAt: 2, BehaviourCap: 5}, Config{}.WithDefaults())
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Objective: "grpo"}, `objective "grpo" unknown; allowed: naive, ppo, tis, decoupled`},
		{Config{ClipEpsLow: 1}, "ClipEpsLow"},
		{Config{ClipEpsLow: -0.1}, "ClipEpsLow"},
		{Config{ClipEpsHigh: math.Inf(1)}, "ClipEpsHigh"},
		{Config{ClipEpsHigh: -1}, "ClipEpsHigh"},
		{Config{TruncateAt: -2}, "TruncateAt"},
		{Config{BehaviourCap: 0.5}, "BehaviourCap"},
		{Config{BehaviourCap: math.NaN()}, "BehaviourCap"},
		{Config{KLCoef: -1}, "KLCoef"},
		{Config{KLDiscount: 1.5}, "KLDiscount"},
	} {
		err := tc.cfg.Validate()
		require.ErrorIs(t, err, ErrConfig, "%+v", tc.cfg)
		assert.Contains(t, err.Error(), tc.field)
		_, err = New(tc.cfg, nil)
		require.ErrorIs(t, err, ErrConfig)
	}
	require.NoError(t, Config{BehaviourCap: -1, Objective: Decoupled}.Validate())

	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"objective":"tis","truncate_at":1.5}`), &c))
	assert.Equal(t, Config{Objective: TIS, TruncateAt: 1.5}, c)
	err := json.Unmarshal([]byte(`{"objective":"TIS"}`), &c)
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "allowed: naive, ppo, tis, decoupled")
	for _, o := range Objectives() {
		got, err := ParseObjective(string(o))
		require.NoError(t, err)
		assert.Equal(t, o, got)
	}
}

func TestFromRL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   rl.Config
		want Config
		err  string
	}{
		{rl.Config{}, Config{Objective: Naive}, ""},
		{rl.Config{KLCoef: 0.1, Correction: rl.TIS}, Config{Objective: TIS, KLCoef: 0.1}, ""},
		{rl.Config{Correction: rl.Decoupled}, Config{Objective: Decoupled}, ""},
		{rl.Config{Loss: rl.Loss{Name: rl.PPO}}, Config{Objective: PPO}, ""},
		{rl.Config{Loss: rl.Loss{Name: rl.PPO, Config: map[string]float64{ClipLowKey: 0.75, ClipHighKey: 1.25}}},
			Config{Objective: PPO, ClipEpsLow: 0.25, ClipEpsHigh: 0.25}, ""},
		{rl.Config{Loss: rl.Loss{Name: rl.CISPO}}, Config{}, `loss "cispo" with correction none has no GRPO objective`},
		{rl.Config{Correction: "vtrace"}, Config{}, `correction "vtrace" unknown`},
		{rl.Config{Loss: rl.Loss{Name: rl.PPO, Config: map[string]float64{ClipLowKey: 1.5}}}, Config{}, "ClipEpsLow"},
	} {
		got, err := FromRL(tc.in)
		if tc.err != "" {
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err)
		assert.InDelta(t, tc.want.ClipEpsLow, got.ClipEpsLow, 1e-12)
		assert.InDelta(t, tc.want.ClipEpsHigh, got.ClipEpsHigh, 1e-12)
		got.ClipEpsLow, got.ClipEpsHigh = tc.want.ClipEpsLow, tc.want.ClipEpsHigh
		assert.Equal(t, tc.want, got)
	}
}
