package rl

import (
	"context"
	"fmt"
	"math"

	"github.com/tandemrl/tandem/policy"
)

// Algorithm turns trajectory groups into a training batch: advantages,
// datums and the loss. GRPO, PPO and their off-policy corrections plug in
// here without touching the pipeline.
//
// The loop calls Batch from one goroutine, once per optimizer step, with
// the groups of that step and the trainer (for algorithms that need an extra
// forward pass, e.g. a proximal policy). step is the policy version the
// trainer holds before the step. The loop does not call Batch again until
// the trainer has resolved every future of the previous batch, so an
// Algorithm may reuse the memory of the Batch it returned last (datums,
// slices, maps); trainers must not keep datums after resolving.
//
// The groups, and the trajectories they hold, belong to the loop: they are
// valid until the step's futures resolve, after which the loop recycles
// their memory for new rollouts. An Algorithm that keeps anything from them
// beyond the step (samples to log later, say) must copy it.
type Algorithm interface {
	Batch(ctx context.Context, t Trainer, step policy.Version, groups []Group) (Batch, error)
}

// Batch is what one optimizer step trains on.
type Batch struct {
	// Datums are passed to Trainer.ForwardBackward with Loss.
	Datums []Datum
	Loss   Loss
	// Actions locates the sampled tokens inside the datums: the positions
	// whose "logprobs" input is a sampler log-prob. The loop compares those
	// with the trainer's log-probs to report the sampler/trainer gap.
	Actions []Span
	// Metrics are reported with the step (e.g. "advantage:mean").
	Metrics map[string]float64
	// GapSum and GapTokens carry a sampler/trainer log-prob gap the
	// algorithm measured itself (Σ|μ − p| over GapTokens action tokens),
	// for batches whose Actions cannot point at sampler log-probs because
	// the "logprobs" inputs hold something else (e.g. a proximal policy).
	// The loop uses them when Actions is empty.
	GapSum    float64
	GapTokens int
}

// Preparer is an optional extension of Algorithm: the loop calls Prepare
// once per learner step with all of the step's groups before it splits them
// into Config.Substeps batches (e.g. to compute a proximal policy for the
// whole step, as AReaL's decoupled PPO does).
type Preparer interface {
	Prepare(ctx context.Context, t Trainer, step policy.Version, groups []Group) error
}

// OutputMetrics is an optional extension of Algorithm: after the
// forward-backward of each Batch the loop passes the trainer's output, and
// reports the metrics returned (e.g. the importance ratio and the share of
// tokens a clip acted on).
type OutputMetrics interface {
	OutputMetrics(out ForwardBackwardOutput) (map[string]float64, error)
}

// Span is the half-open range [Start, End) of loss-input positions of datum
// Datum.
type Span struct{ Datum, Start, End int }

// GroupRelative is the default algorithm: each trajectory's advantage is
// its return minus the mean return of its group (divided by the group's
// standard deviation when NormalizeStd is set), and every transition becomes
// one datum for the importance_sampling loss (or Loss, when set). Groups
// whose returns are all equal carry no signal; SkipUniform leaves them out.
//
// A GroupRelative reuses its memory from one Batch call to the next (see
// Algorithm); it is not safe for concurrent use.
type GroupRelative struct {
	NormalizeStd bool
	SkipUniform  bool
	Loss         Loss

	datums  []Datum
	scratch []datumScratch
	actions []Span
	metrics map[string]float64
	adv     []float64
}

type datumScratch struct {
	n       int // length of the slices inputs hold (0 = not set)
	chunk   [1]Chunk
	tokens  []int
	targets []int64
	lps     []float64
	advs    []float64
	inputs  map[string]TensorData
}

// Batch implements Algorithm.
func (a *GroupRelative) Batch(_ context.Context, _ Trainer, _ policy.Version, groups []Group) (Batch, error) {
	a.datums = a.datums[:0]
	a.actions = a.actions[:0]
	if a.metrics == nil {
		a.metrics = make(map[string]float64, 4)
	}
	var sumAdv, sumAbs float64
	var nTraj, skipped int
	for gi := range groups {
		g := &groups[gi]
		a.adv = a.adv[:0]
		var mean float64
		for ti := range g.Trajectories {
			r := g.Trajectories[ti].Return()
			a.adv = append(a.adv, r)
			mean += r
		}
		if len(a.adv) == 0 {
			continue
		}
		mean /= float64(len(a.adv))
		var vari float64
		for _, r := range a.adv {
			vari += (r - mean) * (r - mean)
		}
		std := math.Sqrt(vari / float64(len(a.adv)))
		if a.SkipUniform && std == 0 {
			skipped++
			continue
		}
		for i := range a.adv {
			a.adv[i] -= mean
			if a.NormalizeStd {
				a.adv[i] /= std + 1e-6
			}
		}
		for ti := range g.Trajectories {
			adv := a.adv[ti]
			sumAdv += adv
			sumAbs += math.Abs(adv)
			nTraj++
			trs := g.Trajectories[ti].Transitions
			for k := range trs {
				tr := &trs[k]
				if len(tr.Logprobs) != len(tr.Action) {
					return Batch{}, fmt.Errorf("rl: group %d trajectory %d turn %d: %d action tokens but %d logprobs", gi, ti, k, len(tr.Action), len(tr.Logprobs))
				}
				a.appendDatum(tr, adv)
			}
		}
	}
	if nTraj > 0 {
		a.metrics["advantage:mean"] = sumAdv / float64(nTraj)
		a.metrics["advantage:abs_mean"] = sumAbs / float64(nTraj)
	}
	a.metrics["groups:skipped_uniform"] = float64(skipped)
	loss := a.Loss
	if loss.Name == "" {
		loss.Name = ImportanceSampling
	}
	return Batch{Datums: a.datums, Loss: loss, Actions: a.actions, Metrics: a.metrics}, nil
}

// shortDatum is the length up to which a datum is filled by fillShort: for
// a few tokens, one pass of plain loops costs less than the runtime's copy
// and clear calls.
const shortDatum = 32

// fillShort fills a short datum of one observation chunk obs and action
// act (with log-probs lp): what appendDatum's copies do, in one pass.
func fillShort(toks []int, tg []int64, lps, advs []float64, obs, act []int, lp []float64, adv float64) {
	for i, t := range obs {
		toks[i] = t
	}
	for i, t := range act {
		toks[len(obs)+i] = t
	}
	first := len(obs) - 1
	for p := range tg {
		tg[p] = int64(toks[p+1])
		if p < first {
			lps[p], advs[p] = 0, 0
		} else {
			lps[p], advs[p] = lp[p-first], adv
		}
	}
}

// appendDatum adds the datum of one transition: input = observation ++
// action minus the last token, targets shifted by one, sampler log-probs and
// the advantage on action positions, zeros on observation positions. It
// reuses the memory of the datum at the same index in the previous batch.
func (a *GroupRelative) appendDatum(tr *Transition, adv float64) {
	var obs int
	if len(tr.Observation.Chunks) == 1 {
		obs = len(tr.Observation.Chunks[0].Tokens)
	} else {
		obs = tr.Observation.Len()
	}
	m := len(tr.Action)
	n := obs + m - 1 // positions
	if m == 0 || n <= 0 {
		return
	}
	i := len(a.datums)
	if i == len(a.scratch) {
		a.scratch = append(a.scratch, datumScratch{inputs: make(map[string]TensorData, 3)})
	}
	s := &a.scratch[i]
	moved := false
	if cap(s.tokens) < n+1 {
		s.tokens, moved = make([]int, n+1), true
	}
	if cap(s.targets) < n {
		s.targets, s.lps, s.advs, moved = make([]int64, n), make([]float64, n), make([]float64, n), true
	}
	toks := s.tokens[:n+1]
	tg, lps, advs := s.targets[:n], s.lps[:n], s.advs[:n]
	first := obs - 1 // position whose target is the first action token
	start := max(first, 0)
	if len(tr.Observation.Chunks) == 1 && n <= shortDatum {
		fillShort(toks, tg, lps, advs, tr.Observation.Chunks[0].Tokens, tr.Action, tr.Logprobs, adv)
	} else {
		off := 0
		for ci := range tr.Observation.Chunks {
			off += copy(toks[off:], tr.Observation.Chunks[ci].Tokens)
		}
		copy(toks[off:], tr.Action)
		for p, t := range toks[1:] {
			tg[p] = int64(t)
		}
		clear(lps[:start])
		clear(advs[:start])
		copy(lps[start:], tr.Logprobs[start-first:])
		for p := start; p < n; p++ {
			advs[p] = adv
		}
	}
	s.tokens = toks
	// Field by field: building the Chunk and copying it costs a
	// store-forwarding stall.
	s.chunk[0].Type, s.chunk[0].Tokens = ChunkEncodedText, toks[:n]
	if moved || n != s.n {
		// The map's values are slice headers: rewrite them only when the
		// slices moved or changed length (map writes cost more than the
		// rest of the datum).
		s.inputs[InputTargetTokens] = TensorData{DType: Int64, Ints: tg}
		s.inputs[InputLogprobs] = TensorData{DType: Float32, Floats: lps}
		s.inputs[InputAdvantages] = TensorData{DType: Float32, Floats: advs}
		s.n = n
	}
	a.datums = append(a.datums, Datum{ModelInput: ModelInput{Chunks: s.chunk[:]}, LossFnInputs: s.inputs})
	a.actions = append(a.actions, Span{Datum: i, Start: start, End: n})
}
