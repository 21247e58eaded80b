package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/train"
)

// LearningSettings is the learning sweep: every (k, objective) cell runs the
// arithmetic GRPO job on the embedded engine once per seed, with the same
// step budget and the same seeds.
type LearningSettings struct {
	Ks             []int            `json:"ks"`
	Objectives     []algo.Objective `json:"objectives"`
	Seeds          []int64          `json:"seeds"`
	Steps          int              `json:"steps"`
	GroupsPerBatch int              `json:"groups_per_batch"`
	GroupSize      int              `json:"group_size"`
	// Substeps splits each batch into this many optimizer steps, for every
	// objective: decoupled PPO clips against the proximal policy only
	// across substeps, so with one substep it would equal plain PPO.
	Substeps       int            `json:"substeps"`
	StalePolicy    rl.StalePolicy `json:"stale_policy"`
	EvalProblems   int            `json:"eval_problems"`
	EvalEvery      int            `json:"eval_every"`
	TargetAccuracy float64        `json:"target_accuracy"`
	LearningRate   float64        `json:"learning_rate"`
	// BehaviourCap is decoupled PPO's filter on π_prox/μ (0 = algo's
	// default, negative = no filter).
	BehaviourCap   float64 `json:"behaviour_cap,omitempty"`
	TrainerThreads int     `json:"trainer_threads"`
	SamplerThreads int     `json:"sampler_threads"`
}

// LearningRun is one seed of one cell.
type LearningRun struct {
	Seed                int64    `json:"seed"`
	BaseAccuracy        float64  `json:"base_accuracy"`
	FinalAccuracy       float64  `json:"final_accuracy"`
	TrainSeconds        float64  `json:"train_seconds"`
	WallSeconds         float64  `json:"wall_seconds"`
	TimeToTargetSeconds *float64 `json:"time_to_target_seconds"`
	SamplesPerSecond    float64  `json:"samples_per_second"`
	MeanStaleness       float64  `json:"mean_staleness"`
	MaxStalenessSeen    int      `json:"max_staleness_seen"`
	Dropped             int64    `json:"dropped"`
	Requeued            int64    `json:"requeued"`
	MeanLogprobGap      float64  `json:"mean_logprob_gap"`
	FinalReward         float64  `json:"final_reward"`
}

// LearningCell aggregates the seeds of one (k, objective) cell.
type LearningCell struct {
	K             int            `json:"k"`
	Objective     algo.Objective `json:"objective"`
	BaseAccuracy  Stat           `json:"base_accuracy"`
	FinalAccuracy Stat           `json:"final_accuracy"`
	// TrainSeconds is the wall time of the training loop (evaluation
	// excluded).
	TrainSeconds Stat `json:"train_seconds"`
	// TimeToTarget is over the seeds that reached the target; Reached
	// counts them.
	TimeToTarget     Stat          `json:"time_to_target_seconds"`
	Reached          int           `json:"reached_target"`
	SamplesPerSecond Stat          `json:"samples_per_second"`
	MeanStaleness    Stat          `json:"mean_staleness"`
	MaxStalenessSeen int           `json:"max_staleness_seen"`
	Dropped          Stat          `json:"dropped"`
	Requeued         Stat          `json:"requeued"`
	LogprobGap       Stat          `json:"logprob_gap"`
	Runs             []LearningRun `json:"runs"`
}

// LearningTable is the learning sweep's result.
type LearningTable struct {
	Settings LearningSettings `json:"settings"`
	Cells    []LearningCell   `json:"cells"`
	Seconds  float64          `json:"seconds"`
}

// trainFunc runs one job; train.Run in the command, a fake in tests.
type trainFunc func(ctx context.Context, cfg train.Config) (train.Summary, error)

func runTrain(ctx context.Context, cfg train.Config) (train.Summary, error) {
	return train.Run(ctx, cfg, train.Hooks{})
}

// jobConfig is the train configuration of one run of the sweep.
func (s LearningSettings) jobConfig(k int, obj algo.Objective, seed int64, dir string) train.Config {
	cfg := train.DefaultConfig()
	cfg.Name = fmt.Sprintf("k%d-%s-seed%d", k, obj, seed)
	cfg.RL.MaxStaleness = k
	cfg.RL.StalePolicy = s.StalePolicy
	cfg.RL.Steps = s.Steps
	cfg.RL.GroupsPerBatch = s.GroupsPerBatch
	cfg.RL.GroupSize = s.GroupSize
	cfg.RL.Substeps = s.Substeps
	cfg.RL.Seed = seed
	cfg.RL.SaveEvery = 0 // checkpoints cost time the comparison should not carry
	if s.LearningRate > 0 {
		cfg.RL.Adam.LearningRate = s.LearningRate
	}
	cfg.Algo = algo.Config{Objective: obj, BehaviourCap: s.BehaviourCap}
	cfg.TrainerThreads, cfg.SamplerThreads = s.TrainerThreads, s.SamplerThreads
	cfg.EvalEvery = s.EvalEvery
	cfg.EvalProblems = s.EvalProblems
	cfg.TargetAccuracy = s.TargetAccuracy
	cfg.Dir = dir
	return cfg
}

// runLearning runs every cell, in order k then objective, seed by seed,
// calling progress after each run.
func runLearning(ctx context.Context, s LearningSettings, dir string, run trainFunc, progress func(string)) (LearningTable, error) {
	began := time.Now()
	tab := LearningTable{Settings: s}
	total, done := len(s.Ks)*len(s.Objectives)*len(s.Seeds), 0
	for _, k := range s.Ks {
		for _, obj := range s.Objectives {
			runs := make([]LearningRun, 0, len(s.Seeds))
			for _, seed := range s.Seeds {
				cfg := s.jobConfig(k, obj, seed, dir)
				sum, err := run(ctx, cfg)
				if err != nil {
					return tab, fmt.Errorf("learning cell k=%d objective=%s seed=%d: %w", k, obj, seed, err)
				}
				r := runFromSummary(seed, sum)
				runs = append(runs, r)
				done++
				if progress != nil {
					progress(fmt.Sprintf("learning %d/%d: k=%d %-9s seed=%d: accuracy %.3f → %.3f, %.1fs training, %.1f samples/s, mean staleness %.2f, gap %.4f",
						done, total, k, obj, seed, r.BaseAccuracy, r.FinalAccuracy, r.TrainSeconds, r.SamplesPerSecond, r.MeanStaleness, r.MeanLogprobGap))
				}
			}
			tab.Cells = append(tab.Cells, aggregateLearning(k, obj, runs))
		}
	}
	tab.Seconds = time.Since(began).Seconds()
	return tab, nil
}

func runFromSummary(seed int64, s train.Summary) LearningRun {
	return LearningRun{
		Seed: seed, BaseAccuracy: s.BaseAccuracy, FinalAccuracy: s.FinalAccuracy,
		TrainSeconds: s.TrainSeconds, WallSeconds: s.WallSeconds, TimeToTargetSeconds: s.TimeToTargetSeconds,
		SamplesPerSecond: s.SamplesPerSecond, MeanStaleness: s.MeanStaleness, MaxStalenessSeen: s.MaxStalenessSeen,
		Dropped: s.Dropped, Requeued: s.Requeued, MeanLogprobGap: s.MeanLogprobGap, FinalReward: s.FinalReward,
	}
}

// aggregateLearning summarizes the runs of one cell.
func aggregateLearning(k int, obj algo.Objective, runs []LearningRun) LearningCell {
	c := LearningCell{K: k, Objective: obj, Runs: runs}
	pick := func(f func(LearningRun) float64) Stat {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		return summarize(xs)
	}
	c.BaseAccuracy = pick(func(r LearningRun) float64 { return r.BaseAccuracy })
	c.FinalAccuracy = pick(func(r LearningRun) float64 { return r.FinalAccuracy })
	c.TrainSeconds = pick(func(r LearningRun) float64 { return r.TrainSeconds })
	c.SamplesPerSecond = pick(func(r LearningRun) float64 { return r.SamplesPerSecond })
	c.MeanStaleness = pick(func(r LearningRun) float64 { return r.MeanStaleness })
	c.Dropped = pick(func(r LearningRun) float64 { return float64(r.Dropped) })
	c.Requeued = pick(func(r LearningRun) float64 { return float64(r.Requeued) })
	c.LogprobGap = pick(func(r LearningRun) float64 { return r.MeanLogprobGap })
	var ttt []float64
	for _, r := range runs {
		c.MaxStalenessSeen = max(c.MaxStalenessSeen, r.MaxStalenessSeen)
		if r.TimeToTargetSeconds != nil {
			ttt = append(ttt, *r.TimeToTargetSeconds)
		}
	}
	c.TimeToTarget = summarize(ttt)
	c.Reached = len(ttt)
	return c
}

// Markdown renders the learning table.
func (t LearningTable) Markdown() string {
	s := t.Settings
	header := []string{"k", "objective", "final accuracy", "train s", "time to " + strconv.FormatFloat(s.TargetAccuracy, 'f', -1, 64) + " (s)",
		"samples/s", "mean staleness", "max staleness", "dropped", "requeued", "log-prob gap"}
	rows := make([][]string, 0, len(t.Cells))
	for _, c := range t.Cells {
		ttt := c.TimeToTarget.format(1)
		if c.Reached < len(c.Runs) {
			ttt += fmt.Sprintf(" (%d/%d reached)", c.Reached, len(c.Runs))
		}
		rows = append(rows, []string{
			strconv.Itoa(c.K), string(c.Objective), c.FinalAccuracy.format(3), c.TrainSeconds.format(1), ttt,
			c.SamplesPerSecond.format(1), c.MeanStaleness.format(2), strconv.Itoa(c.MaxStalenessSeen),
			c.Dropped.format(0), c.Requeued.format(0), c.LogprobGap.format(4),
		})
	}
	base := "—"
	if len(t.Cells) > 0 {
		base = t.Cells[0].BaseAccuracy.format(3)
	}
	behav := ""
	switch {
	case s.BehaviourCap < 0:
		behav = ", decoupled's behaviour weight not filtered"
	case s.BehaviourCap > 0:
		behav = fmt.Sprintf(", decoupled's behaviour cap %g", s.BehaviourCap)
	}
	return fmt.Sprintf("### Learning sweep (embedded engine, arithmetic GRPO)\n\n"+
		"%d steps × %d groups × %d samples, %d substeps per step, stale policy %s, lr %g%s, seeds %v; "+
		"held-out accuracy on %d problems (base model %s); mean ± sample std over seeds.\n\n%s",
		s.Steps, s.GroupsPerBatch, s.GroupSize, s.Substeps, s.StalePolicy, s.LearningRate, behav, s.Seeds,
		s.EvalProblems, base, mdTable(header, rows))
}
