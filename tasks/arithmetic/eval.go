package arithmetic

import (
	"context"
	"fmt"

	"github.com/sourcegraph/conc/pool"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// EvalResult is a held-out evaluation.
type EvalResult struct {
	Problems   int            `json:"problems"`
	Correct    int            `json:"correct"`
	WellFormed int            `json:"well_formed"`
	Accuracy   float64        `json:"accuracy"`
	Version    policy.Version `json:"version"` // the oldest version that answered
}

// graded is one problem's evaluation.
type graded struct {
	correct, wellFormed bool
	version             policy.Version
}

// Evaluate draws one completion per problem with params, its prompt written
// by PromptTokens and its seed seed+i for problem i (so the same weights
// give the same result), and grades it with Grade: accuracy is the share the
// reward's correctness term scores 1. Up to parallel Sample calls run at
// once (at least one); the first failure cancels the calls still running
// and is returned, naming its problem. Every goroutine it starts has ended
// when it returns.
func Evaluate(ctx context.Context, s rl.Sampler, problems []Problem, params rl.SamplingParams, seed int64, parallel int) (EvalResult, error) {
	return EvaluateWith(ctx, s, Char{}, problems, params, seed, parallel)
}

// EvaluateWith is Evaluate with the prompts and completions written by w
// (Chat for a chat model; params then carries its renderer's stops).
func EvaluateWith(ctx context.Context, s rl.Sampler, w Writer, problems []Problem, params rl.SamplingParams, seed int64, parallel int) (EvalResult, error) {
	res := EvalResult{Problems: len(problems), Version: -1}
	if len(problems) == 0 {
		return res, nil
	}
	out := make([]graded, len(problems))
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().
		WithMaxGoroutines(max(1, min(parallel, len(problems))))
	for i, pr := range problems {
		p.Go(func(ctx context.Context) error {
			g, err := evalOne(ctx, s, w, pr, params, seed+int64(i))
			if err != nil {
				return fmt.Errorf("arithmetic: evaluate %v: %w", pr, err)
			}
			out[i] = g
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return res, err
	}
	for _, g := range out {
		if g.correct {
			res.Correct++
		}
		if g.wellFormed {
			res.WellFormed++
		}
		if res.Version < 0 || g.version < res.Version {
			res.Version = g.version
		}
	}
	res.Accuracy = float64(res.Correct) / float64(res.Problems)
	return res, nil
}

// evalOne samples and grades one completion of p.
func evalOne(ctx context.Context, s rl.Sampler, w Writer, p Problem, params rl.SamplingParams, seed int64) (graded, error) {
	if err := ctx.Err(); err != nil {
		return graded{}, context.Cause(ctx)
	}
	params.Seed = &seed
	ids, err := w.PromptTokens(p)
	if err != nil {
		return graded{}, err
	}
	o, err := s.Sample(ctx, rl.Tokens(ids), 1, params)
	if err != nil {
		return graded{}, err
	}
	if len(o.Sequences) != 1 {
		return graded{}, fmt.Errorf("sampler returned %d sequences for n = 1", len(o.Sequences))
	}
	c, f := Grade(p, w.Decode(o.Sequences[0].Tokens))
	return graded{correct: c, wellFormed: f, version: o.Version}, nil
}
