package algo

import (
	"fmt"
	"math"

	"github.com/tandemrl/tandem/rl"
)

// stdEps keeps the division by a group's standard deviation finite.
const stdEps = 1e-6

// GroupAdvantages returns the advantage of each return in a group: the
// return minus the group's mean, divided by the group's population standard
// deviation plus 1e-6 when normalizeStd is set. uniform reports whether every
// return is equal (then every advantage is 0). The result is appended to
// dst[:0]; returns is not modified.
func GroupAdvantages(dst, returns []float64, normalizeStd bool) (adv []float64, uniform bool) {
	dst = dst[:0]
	if len(returns) == 0 {
		return dst, true
	}
	uniform = true
	var mean float64
	for _, r := range returns {
		mean += r
		uniform = uniform && r == returns[0]
	}
	if uniform {
		for range returns {
			dst = append(dst, 0)
		}
		return dst, true
	}
	mean /= float64(len(returns))
	var vari float64
	for _, r := range returns {
		vari += (r - mean) * (r - mean)
	}
	std := math.Sqrt(vari / float64(len(returns)))
	for _, r := range returns {
		a := r - mean
		if normalizeStd {
			a /= std + stdEps
		}
		dst = append(dst, a)
	}
	return dst, false
}

// unit is one datum under construction: the slices its loss inputs hold,
// and where its action tokens are.
type unit struct {
	datum      rl.Datum
	targets    []int64
	mu         []float64 // the datum's "logprobs" input: sampler log-probs on action positions, 0 elsewhere
	adv        []float64 // the datum's "advantages" input
	start, end int       // action positions [start, end)
	src        *rl.Transition
}

// newUnit builds the datum of one transition: input = observation ++ action
// without its last token, targets shifted by one, the sampler's log-probs
// and the advantage on the positions whose target is an action token, zeros
// on the others. A transition whose input would be empty (no observation and
// a one-token action, or no action) yields ok == false.
func newUnit(tr *rl.Transition, adv float64) (u unit, ok bool, err error) {
	if len(tr.Logprobs) != len(tr.Action) {
		return unit{}, false, fmt.Errorf("%d action tokens but %d logprobs", len(tr.Action), len(tr.Logprobs))
	}
	obs := tr.Observation.Len()
	full := make([]int, 0, obs+len(tr.Action))
	for _, c := range tr.Observation.Chunks {
		full = append(full, c.Tokens...)
	}
	full = append(full, tr.Action...)
	n := len(full) - 1
	if len(tr.Action) == 0 || n <= 0 {
		return unit{}, false, nil
	}
	u.targets = make([]int64, n)
	for p := range n {
		u.targets[p] = int64(full[p+1])
	}
	u.mu = make([]float64, n)
	u.adv = make([]float64, n)
	// Position p predicts full[p+1]: action token j sits at full[obs+j], so
	// it is the target of position obs+j−1.
	u.start, u.end, u.src = max(obs-1, 0), n, tr
	for p := u.start; p < n; p++ {
		u.mu[p] = tr.Logprobs[p+1-obs]
		u.adv[p] = adv
	}
	u.datum = rl.Datum{
		ModelInput: rl.Tokens(full[:n]),
		LossFnInputs: map[string]rl.TensorData{
			rl.InputTargetTokens: {DType: rl.Int64, Ints: u.targets},
			rl.InputLogprobs:     {DType: rl.Float32, Floats: u.mu},
			rl.InputAdvantages:   {DType: rl.Float32, Floats: u.adv},
		},
	}
	return u, true, nil
}
