package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/reward/plugin"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

var tok engine.Tokenizer

// terseAnswer is the format the format term rewards: " 47" and a newline.
const terseAnswer = `^ -?\d+\n?$`

// arithmeticReward is FinalInteger (weight 1) plus the format term, plus the
// plugin term when configured.
func arithmeticReward(cfg Config, plug scorer) (reward.Func, error) {
	format, err := reward.Format(terseAnswer)
	if err != nil {
		return nil, err
	}
	terms := []reward.Term{{Weight: 1, Func: reward.FinalInteger()}}
	if cfg.FormatWeight > 0 {
		terms = append(terms, reward.Term{Weight: cfg.FormatWeight, Func: format})
	}
	if plug != nil {
		terms = append(terms, reward.Term{Weight: cfg.RewardPlugin.Weight, Func: func(ctx context.Context, s reward.Sample) (float64, error) {
			return plug.Score(ctx, plugin.Request{Prompt: tok.Decode(s.Prompt), Completion: s.Text, Answer: s.Reference})
		}})
	}
	return reward.Sum(terms...), nil
}

type scorer interface {
	Score(ctx context.Context, req plugin.Request) (float64, error)
}

// promptTokens is BOS followed by the prompt's characters.
func promptTokens(p arithmetic.Problem) []int {
	ids, err := tok.Encode(p.Prompt())
	if err != nil {
		panic(fmt.Sprintf("arithmetic prompt %q not encodable: %v", p.Prompt(), err)) // cannot happen: ASCII
	}
	return append([]int{engine.BOS}, ids...)
}

// arithmeticDataset shuffles the training problems with the run's seed and
// serves them for as many epochs as needed.
func arithmeticDataset(seed int64, fn reward.Func, start int) *rollout.SliceDataset {
	train, _ := arithmetic.Split()
	rng := rand.New(rand.NewPCG(uint64(seed), 0xa417))
	order := rng.Perm(len(train))
	items := make([]rollout.Problem, len(train))
	for i, j := range order {
		p := train[j]
		items[i] = &rollout.SingleTurn{
			ID:        p.String(),
			Prompt:    rl.Tokens(promptTokens(p)),
			Reference: strconv.Itoa(p.Answer()),
			Reward:    fn,
		}
	}
	return rollout.NewSliceDataset(items, start, -1)
}

// heldOut returns the first n held-out problems.
func heldOut(n int) []arithmetic.Problem {
	_, held := arithmetic.Split()
	return held[:min(n, len(held))]
}
