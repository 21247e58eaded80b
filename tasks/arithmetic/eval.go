package arithmetic

import (
	"context"
	"fmt"
	"sync"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// Tokenizer turns text into token ids and back.
type Tokenizer interface {
	Encode(s string) ([]int, error)
	Decode(ids []int) string
}

// EvalResult is a held-out evaluation.
type EvalResult struct {
	Problems   int            `json:"problems"`
	Correct    int            `json:"correct"`
	WellFormed int            `json:"well_formed"`
	Accuracy   float64        `json:"accuracy"`
	Version    policy.Version `json:"version"` // the oldest version that answered
}

// Evaluate draws one completion per problem with params (seeded per problem
// from seed, so the same weights give the same result) and grades it.
// prefix is prepended to every prompt's tokens (e.g. BOS). Calls run on up to
// parallel goroutines.
func Evaluate(ctx context.Context, s rl.Sampler, tok Tokenizer, prefix []int, problems []Problem, params rl.SamplingParams, seed int64, parallel int) (EvalResult, error) {
	res := EvalResult{Problems: len(problems), Version: -1}
	if len(problems) == 0 {
		return res, nil
	}
	parallel = max(1, min(parallel, len(problems)))
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		next     int
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range parallel {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(problems) || ctx.Err() != nil {
					return
				}
				p := problems[i]
				ids, err := tok.Encode(p.Prompt())
				if err == nil {
					prompt := append(append([]int(nil), prefix...), ids...)
					sp := params
					sd := seed + int64(i)
					sp.Seed = &sd
					var out rl.SampleOutput
					out, err = s.Sample(ctx, rl.Tokens(prompt), 1, sp)
					if err == nil {
						correct, terse := Grade(p, tok.Decode(out.Sequences[0].Tokens))
						mu.Lock()
						if correct {
							res.Correct++
						}
						if terse {
							res.WellFormed++
						}
						if res.Version < 0 || out.Version < res.Version {
							res.Version = out.Version
						}
						mu.Unlock()
						continue
					}
				}
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("arithmetic: evaluate %v: %w", p, err)
				}
				mu.Unlock()
				cancel()
				return
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	res.Accuracy = float64(res.Correct) / float64(res.Problems)
	return res, nil
}
