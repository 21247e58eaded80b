package train

import (
	"context"
	"fmt"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/reward/plugin"
	"github.com/tandemrl/tandem/runlog"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// The job's task, arithmetic: its reward (with an optional plugin term),
// its held-out problems and the evaluation of policy versions on them. The
// task's own wiring (prompts, reward terms, dataset, grading) is
// tasks/arithmetic's.

// scorer is what the plugin term asks of a reward plugin (plugin.Proc and
// plugin.HTTP are ones).
type scorer interface {
	Score(ctx context.Context, req plugin.Request) (float64, error)
}

// pluginTerm is the reward term that asks plug to score a sample, with the
// given weight.
func pluginTerm(weight float64, plug scorer, decodePrompt func([]int) string) reward.Term {
	return reward.Term{Weight: weight, Func: func(ctx context.Context, s reward.Sample) (float64, error) {
		return plug.Score(ctx, plugin.Request{Prompt: decodePrompt(s.Prompt), Completion: s.Text, Answer: s.Reference})
	}}
}

// newReward is the task's reward with the job's format weight, plus the
// reward plugin's term when the job configures one. stop ends the plugin
// (a no-op without one); call it when the run is over.
func newReward(cfg Config, mdl *model) (fn reward.Func, stop func(), err error) {
	task := arithmetic.Reward
	if mdl.chat {
		task = arithmetic.ChatReward
	}
	p := cfg.RewardPlugin
	if p == nil {
		return task(cfg.FormatWeight), func() {}, nil
	}
	if len(p.Command) > 0 {
		pr, err := plugin.NewProc(plugin.ProcConfig{Command: p.Command, Timeout: p.Timeout})
		if err != nil {
			return nil, nil, fmt.Errorf("plugin %q: %w", p.Command, err)
		}
		return task(cfg.FormatWeight, pluginTerm(p.Weight, pr, mdl.decodePrompt)), func() { _ = pr.Close() }, nil
	}
	h, err := plugin.NewHTTP(plugin.HTTPConfig{URL: p.URL, Timeout: p.Timeout})
	if err != nil {
		return nil, nil, fmt.Errorf("plugin %s: %w", p.URL, err)
	}
	return task(cfg.FormatWeight, pluginTerm(p.Weight, h, mdl.decodePrompt)), func() {}, nil
}

// heldOut returns the first n held-out problems.
func heldOut(n int) []arithmetic.Problem {
	_, held := arithmetic.Split()
	return held[:min(n, len(held))]
}

// evaluate measures the held-out accuracy of the version ref names (nil:
// the base alone), served from the shelf by a private sampler using every
// core the job was given, one problem at a time, seeded from the run's
// seed so that the same weights give the same figure. Accuracy is the
// share of problems the reward's correctness term scores 1
// (arithmetic.Evaluate).
func (b *backends) evaluate(ctx context.Context, ref *policy.Ref, cfg Config, held []arithmetic.Problem) (float64, error) {
	s, err := local.NewSampler(b.base, local.SamplerOptions{Threads: cfg.TrainerThreads + cfg.SamplerThreads, Shelf: b.shelf, TokenText: b.tokenText})
	if err != nil {
		return 0, err
	}
	if ref != nil {
		if err := s.Load(ctx, *ref); err != nil {
			return 0, fmt.Errorf("load %s: %w", ref.URI, err)
		}
	}
	res, err := arithmetic.EvaluateWith(ctx, s, b.w, held, cfg.RL.Sampling, cfg.RL.Seed*7919, 1)
	return res.Accuracy, err
}

// evaluateSnapshots measures the versions the observer marked, oldest
// first, now that timing no longer matters: each accuracy goes into
// sum.Evals and into the run log's record of its step, the last one is
// sum.FinalAccuracy, and the first to reach the target sets
// sum.TimeToTargetSeconds. A marked version the registry does not hold is
// skipped.
func evaluateSnapshots(ctx context.Context, cfg Config, be *backends, registry *policy.Registry, marked []EvalPoint,
	held []arithmetic.Problem, rlog *runlog.Run, hooks Hooks, sum *Summary) error {
	for _, pt := range marked {
		ref, ok := registry.Get(pt.Version)
		if !ok {
			continue
		}
		acc, err := be.evaluate(ctx, &ref, cfg, held)
		if err != nil {
			return fmt.Errorf("version %d (step %d): %w", pt.Version, pt.Step, err)
		}
		pt.Accuracy = acc
		sum.Evals = append(sum.Evals, pt)
		rlog.SetAccuracy(pt.Step-1, acc)
		if acc >= cfg.TargetAccuracy && sum.TimeToTargetSeconds == nil {
			s := pt.Seconds
			sum.TimeToTargetSeconds = &s
		}
		hooks.logf("step %d (version %d): held-out accuracy %.3f", pt.Step, pt.Version, acc)
	}
	if n := len(sum.Evals); n > 0 {
		sum.FinalAccuracy = sum.Evals[n-1].Accuracy
	}
	return nil
}
