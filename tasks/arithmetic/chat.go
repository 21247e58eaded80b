package arithmetic

import (
	"fmt"
	"math/rand/v2"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

// Writer writes the task for a model: the tokens a problem's prompt is
// given as, and the text a completion's tokens stand for (what the reward
// and Grade score). Char is the shipped model's; Chat a chat model's.
type Writer interface {
	PromptTokens(p Problem) ([]int, error)
	Decode(completion []int) string
}

// Char writes the task for the shipped character model: BOS and the
// prompt's characters (Problem.PromptTokens), decoded by Decode.
type Char struct{}

// PromptTokens implements Writer.
func (Char) PromptTokens(p Problem) ([]int, error) { return p.PromptTokens(), nil }

// Decode implements Writer.
func (Char) Decode(ids []int) string { return Decode(ids) }

// Chat writes the task for a chat model: the prompt is a user turn
// rendered by R's generation prompt, and a completion is what R parses
// out of it (the reply's content, its reasoning set apart). Sample with R's
// stop tokens and strings.
type Chat struct{ R chat.Renderer }

// PromptTokens implements Writer.
func (c Chat) PromptTokens(p Problem) ([]int, error) {
	ids, err := c.R.GenerationPrompt([]chat.Message{{Role: "user", Content: p.Prompt()}}, "")
	if err != nil {
		return nil, fmt.Errorf("arithmetic: render %v with %s: %w", p, c.R.Name(), err)
	}
	return ids, nil
}

// Decode implements Writer: the reply's content, "" when the tokens do not
// decode (a reward then scores it wrong).
func (c Chat) Decode(ids []int) string {
	m, _, err := c.R.Parse(ids)
	if err != nil {
		return ""
	}
	return m.Content
}

// ChatFormat is the format term's pattern for chat replies: the answer
// alone, without the leading space the character corpus writes.
const ChatFormat = `^\s*-?\d+\s*$`

// ChatReward is Reward for chat replies: Correctness with weight 1, plus
// a format term of ChatFormat with formatWeight when positive, plus extra.
func ChatReward(formatWeight float64, extra ...reward.Term) reward.Func {
	terms := []reward.Term{{Weight: 1, Func: correctness}}
	if formatWeight > 0 {
		terms = append(terms, reward.Term{Weight: formatWeight, Func: mustFormat(ChatFormat)})
	}
	return reward.Sum(append(terms, extra...)...)
}

// ProblemsFor is Problems written by w.
func ProblemsFor(w Writer, ps []Problem, fn reward.Func) ([]rollout.Problem, error) {
	out := make([]rollout.Problem, len(ps))
	for i, p := range ps {
		ids, err := w.PromptTokens(p)
		if err != nil {
			return nil, err
		}
		out[i] = &rollout.SingleTurn{ID: p.String(), Prompt: rl.Tokens(ids), Reference: p.Reference(), Reward: fn, Decode: w.Decode}
	}
	return out, nil
}

// DatasetFor is Dataset written by w.
func DatasetFor(w Writer, seed int64, fn reward.Func) (*rollout.SliceDataset, error) {
	train, _ := Split()
	rng := rand.New(rand.NewPCG(uint64(seed), datasetStream))
	shuffled := make([]Problem, len(train))
	for i, j := range rng.Perm(len(train)) {
		shuffled[i] = train[j]
	}
	ps, err := ProblemsFor(w, shuffled, fn)
	if err != nil {
		return nil, err
	}
	return rollout.NewSliceDataset(ps, 0, -1), nil
}
