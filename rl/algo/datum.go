package algo

import (
	"fmt"
	"math"

	"github.com/tandemrl/tandem/rl"
)

// unit is one datum of a batch: the slices its loss inputs hold, and where
// its action tokens are. A unit's memory belongs to the builder that made
// it: it is valid until that builder starts its next batch.
type unit struct {
	targets    []int64
	mu         []float64 // the "logprobs" input: sampler log-probs on action positions (π_prox once decoupled), 0 elsewhere
	adv        []float64 // the "advantages" input
	start, end int       // action positions [start, end)
	src        *rl.Transition

	tokens []int                    // observation ++ action; the datum's input is tokens[:len(targets)]
	chunk  []rl.Chunk               // the datum's one input chunk
	inputs map[string]rl.TensorData // the datum's loss inputs
	set    int                      // len(targets), the length the slices in inputs have (0 = none yet)
}

// builder turns transitions into datums: input = observation ++ action
// without its last token, targets shifted by one, the sampler's log-probs
// and the advantage on the positions whose target is an action token, zeros
// on the others.
//
// A builder reuses the memory of the batch it built last: a datum takes the
// slices and the loss-input map of the datum at the same index in the
// previous batch, growing them only when they are too short, so that a
// steady stream of batches of one shape allocates nothing. The datums of a
// batch are therefore valid until the next reset. A builder is not safe for
// concurrent use.
type builder struct {
	// units[:n], datums[:n] and actions[:n] are the batch being built
	// (datums[i] is units[i]'s datum, actions[i] its action positions); the
	// rest is spare memory.
	units   []unit
	datums  []rl.Datum
	actions []rl.Span
	n       int
	// sums holds the statistics of the advantages written on action
	// positions since the last reset.
	sums advSums
	// replica tags the actions added next (Span.Replica).
	replica string
}

// reset starts a new batch; the previous batch's units become scratch.
func (b *builder) reset() { b.n, b.sums, b.replica = 0, newAdvSums(), "" }

// batch returns the units added since the last reset, their datums and
// their action positions.
func (b *builder) batch() ([]unit, []rl.Datum, []rl.Span) {
	return b.units[:b.n], b.datums[:b.n], b.actions[:b.n]
}

// shortDatum is the length up to which a datum is filled by fillShort: for
// a few tokens, one pass of plain loops costs less than the runtime's copy
// and clear calls.
const shortDatum = 32

// add appends the datum of tr with advantage adv. A transition whose input
// would be empty (no observation and a one-token action, or no action) adds
// nothing. It fails, adding nothing, when tr has not one log-prob per action
// token.
func (b *builder) add(tr *rl.Transition, adv float64) error {
	if len(tr.Logprobs) != len(tr.Action) {
		return fmt.Errorf("%d action tokens but %d logprobs", len(tr.Action), len(tr.Logprobs))
	}
	var obs int
	if len(tr.Observation.Chunks) == 1 {
		obs = len(tr.Observation.Chunks[0].Tokens)
	} else {
		obs = tr.Observation.Len()
	}
	n := obs + len(tr.Action) - 1 // positions
	if len(tr.Action) == 0 || n <= 0 {
		return nil
	}
	if b.n == len(b.units) {
		b.units = append(b.units, unit{chunk: []rl.Chunk{{Type: rl.ChunkEncodedText}}, inputs: make(map[string]rl.TensorData, 3)})
		b.datums = append(b.datums, rl.Datum{})
		b.actions = append(b.actions, rl.Span{})
	}
	u := &b.units[b.n]
	if n != u.set {
		if cap(u.tokens) < n+1 {
			u.tokens = make([]int, n+1)
		}
		if cap(u.targets) < n {
			u.targets, u.mu, u.adv = make([]int64, n), make([]float64, n), make([]float64, n)
		}
		u.tokens, u.targets, u.mu, u.adv = u.tokens[:n+1], u.targets[:n], u.mu[:n], u.adv[:n]
		u.chunk[0].Tokens = u.tokens[:n]
		// The map's values are slice headers: rewrite them only when the
		// slices changed length (map writes cost more than the rest of the
		// datum). They move only when they grow, which changes the length.
		u.inputs[rl.InputTargetTokens] = rl.TensorData{DType: rl.Int64, Ints: u.targets}
		u.inputs[rl.InputLogprobs] = rl.TensorData{DType: rl.Float32, Floats: u.mu}
		u.inputs[rl.InputAdvantages] = rl.TensorData{DType: rl.Float32, Floats: u.adv}
		u.set = n
	}
	toks, tg, mu, advs := u.tokens, u.targets, u.mu, u.adv
	// Position p predicts toks[p+1]: action token j sits at toks[obs+j], so
	// it is the target of position obs+j−1.
	first := obs - 1
	start := max(first, 0)
	if len(tr.Observation.Chunks) == 1 && n <= shortDatum {
		fillShort(toks, tg, mu, advs, tr.Observation.Chunks[0].Tokens, tr.Action, tr.Logprobs, adv)
	} else {
		off := 0
		for ci := range tr.Observation.Chunks {
			off += copy(toks[off:], tr.Observation.Chunks[ci].Tokens)
		}
		copy(toks[off:], tr.Action)
		for p, t := range toks[1:] {
			tg[p] = int64(t)
		}
		clear(mu[:start])
		clear(advs[:start])
		copy(mu[start:], tr.Logprobs[start-first:])
		for p := start; p < n; p++ {
			advs[p] = adv
		}
	}
	u.start, u.end, u.src = start, n, tr
	b.datums[b.n] = rl.Datum{ModelInput: rl.ModelInput{Chunks: u.chunk}, LossFnInputs: u.inputs}
	b.actions[b.n] = rl.Span{Datum: b.n, Start: start, End: n, Replica: b.replica}
	b.sums.addN(adv, n-start)
	b.n++
	return nil
}

// advSums accumulates statistics of advantages over action tokens.
type advSums struct {
	sum, sq, abs, lo, hi float64
	n                    int
}

func newAdvSums() advSums { return advSums{lo: math.Inf(1), hi: math.Inf(-1)} }

// addN counts k tokens of advantage a.
func (s *advSums) addN(a float64, k int) {
	fk := float64(k)
	s.sum += a * fk
	s.sq += a * a * fk
	s.abs += math.Abs(a) * fk
	if a < s.lo {
		s.lo = a
	}
	if a > s.hi {
		s.hi = a
	}
	s.n += k
}

// tokenSums returns the statistics of the units' advantages, token by token.
func tokenSums(units []unit) advSums {
	s := newAdvSums()
	for i := range units {
		for _, a := range units[i].adv[units[i].start:units[i].end] {
			s.addN(a, 1)
		}
	}
	return s
}

// record writes advantage:mean, abs_mean, std, min, max and tokens:action
// into m; nothing when no token was counted.
func (s advSums) record(m map[string]float64) {
	if s.n == 0 {
		return
	}
	n := float64(s.n)
	mean := s.sum / n
	m["advantage:mean"] = mean
	m["advantage:abs_mean"] = s.abs / n
	m["advantage:std"] = math.Sqrt(max(s.sq/n-mean*mean, 0))
	m["advantage:min"], m["advantage:max"] = s.lo, s.hi
	m["tokens:action"] = n
}

// fillShort fills a short datum of one observation chunk obs and action
// act (with log-probs lp): what add's copies do, in one pass.
func fillShort(toks []int, tg []int64, mu, advs []float64, obs, act []int, lp []float64, adv float64) {
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
			mu[p], advs[p] = 0, 0
		} else {
			mu[p], advs[p] = lp[p-first], adv
		}
	}
}
