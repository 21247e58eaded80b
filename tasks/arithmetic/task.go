package arithmetic

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

// This file is the task's wiring, defined once for every job that trains
// or measures on it (tandem train, examples/arithmetic, the e2e tests, the
// benchmarks): what the model is given, how a completion is scored, and the
// dataset of rollout problems.

// tok is the embedded model's tokenizer, the one every prompt is written
// with.
var tok engine.Tokenizer

// EncodePrompt returns the tokens a model is given for text: BOS, then one
// token per character of text. A character the embedded tokenizer does not
// know (outside printable ASCII and newline) is an *engine.EncodeError. The
// returned slice is the caller's.
func EncodePrompt(text string) ([]int, error) {
	ids, err := tok.Encode(text)
	if err != nil {
		return nil, err
	}
	return append([]int{engine.BOS}, ids...), nil
}

// PromptTokens returns the tokens the model is given for p: EncodePrompt of
// p.Prompt(). The returned slice is the caller's.
func (p Problem) PromptTokens() []int {
	ids, err := EncodePrompt(p.Prompt())
	if err != nil {
		// Cannot happen: a prompt is printable ASCII.
		panic(fmt.Sprintf("arithmetic: prompt %q not encodable: %v", p.Prompt(), err))
	}
	return ids
}

// Reference returns the answer the reward compares with: the sum, in
// decimal.
func (p Problem) Reference() string { return strconv.Itoa(p.Answer()) }

// Decode turns completion tokens into the text the reward scores.
func Decode(ids []int) string { return tok.Decode(ids) }

// TerseFormat is the pattern of the reward's format term: the answer alone,
// " 47", with an optional newline, as the terse corpus lines write it.
const TerseFormat = `^ -?\d+\n?$`

// FormatWeight is the format term's weight in the task's reward (the
// correctness term weighs 1): small, so that a right wordy answer still
// beats a wrong terse one.
const FormatWeight = 0.1

var (
	correctness = reward.FinalInteger()
	format      = mustFormat(TerseFormat)
)

func mustFormat(pattern string) reward.Func {
	f, err := reward.Format(pattern)
	if err != nil {
		panic(err) // cannot happen: the pattern is a constant that compiles
	}
	return f
}

// Correctness returns the reward's correctness term: 1 when the last
// integer of the completion equals the sample's Reference
// (reward.FinalInteger), else 0. Held-out accuracy (Grade, Evaluate) is
// graded by this same function. It is safe for concurrent use.
func Correctness() reward.Func { return correctness }

// Format returns the reward's format term: 1 when the completion matches
// TerseFormat, else 0. It is safe for concurrent use.
func Format() reward.Func { return format }

// Reward returns the task's reward: Correctness with weight 1, plus Format
// with formatWeight when formatWeight > 0, plus the extra terms (a reward
// plugin, say), summed. It is safe for concurrent use when the extra terms
// are.
func Reward(formatWeight float64, extra ...reward.Term) reward.Func {
	terms := []reward.Term{{Weight: 1, Func: correctness}}
	if formatWeight > 0 {
		terms = append(terms, reward.Term{Weight: formatWeight, Func: format})
	}
	return reward.Sum(append(terms, extra...)...)
}

// Grade scores a completion of p's prompt with the reward's terms: correct
// when Correctness scores it 1, well-formed when Format does.
func Grade(p Problem, completion string) (correct, wellFormed bool) {
	s := reward.Sample{Text: completion, Reference: p.Reference()}
	c, err := correctness(context.Background(), s)
	if err != nil {
		// Cannot happen: the reference is an integer.
		panic(fmt.Sprintf("arithmetic: grade %v: %v", p, err))
	}
	f, err := format(context.Background(), s)
	if err != nil {
		panic(fmt.Sprintf("arithmetic: grade %v: %v", p, err)) // cannot happen: Format does not fail
	}
	return c == 1, f == 1
}

// Problems returns one rollout problem per element of ps, in order: ID
// "a+b", the prompt's tokens, the sum as reference, scored by fn on the
// text Decode gives.
func Problems(ps []Problem, fn reward.Func) []rollout.Problem {
	out := make([]rollout.Problem, len(ps))
	for i, p := range ps {
		out[i] = &rollout.SingleTurn{
			ID:        p.String(),
			Prompt:    rl.Tokens(p.PromptTokens()),
			Reference: p.Reference(),
			Reward:    fn,
			Decode:    Decode,
		}
	}
	return out
}

// datasetStream keeps the dataset's shuffle apart from every other use of
// the seed.
const datasetStream = 0xa417

// Dataset is the training dataset: the training problems of Split, shuffled
// with seed, as Problems scored by fn, served epoch after epoch without
// end. The same seed gives the same order.
func Dataset(seed int64, fn reward.Func) *rollout.SliceDataset {
	d, err := DatasetFor(Char{}, seed, fn)
	if err != nil {
		panic(err) // cannot happen: Char writes every problem
	}
	return d
}
