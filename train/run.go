package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/progress"
	"github.com/tandemrl/tandem/reward/plugin"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/rl/algo/localbase"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/runlog"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// Hooks receive progress while a job runs; nil members are skipped. They
// are called from the loop's observer goroutine and must not block long.
type Hooks struct {
	Progress func(progress.Status)
	Log      func(msg string)
	Logger   *slog.Logger
}

// EvalPoint is the held-out accuracy of one policy version.
type EvalPoint struct {
	Step     int            `json:"step"`
	Version  policy.Version `json:"version"`
	Seconds  float64        `json:"seconds"` // training wall time when the version was published
	Accuracy float64        `json:"accuracy"`
}

// Summary is what a job reports at the end (the last line `tandem train`
// prints).
type Summary struct {
	Run                 string      `json:"run"`
	Dir                 string      `json:"dir"`
	BaseAccuracy        float64     `json:"base_accuracy"`
	FinalAccuracy       float64     `json:"final_accuracy"`
	AccuracyMeasure     string      `json:"accuracy_measure"`
	HeldOutProblems     int         `json:"held_out_problems"`
	WallSeconds         float64     `json:"wall_seconds"`
	TrainSeconds        float64     `json:"train_seconds"`
	Steps               int         `json:"steps"`
	MaxStaleness        int         `json:"max_staleness"`
	MaxStalenessSeen    int         `json:"max_staleness_seen"`
	MeanStaleness       float64     `json:"mean_staleness"`
	TargetAccuracy      float64     `json:"target_accuracy"`
	TimeToTargetSeconds *float64    `json:"time_to_target_seconds"`
	Dropped             int64       `json:"dropped"`
	Requeued            int64       `json:"requeued"`
	Samples             int         `json:"samples"`
	SamplesPerSecond    float64     `json:"samples_per_second"`
	MeanLogprobGap      float64     `json:"mean_logprob_gap"`
	FinalReward         float64     `json:"final_reward"`
	Checkpoint          string      `json:"checkpoint"`
	Evals               []EvalPoint `json:"evals"`
}

// Run runs the job cfg describes and returns its summary. The run folder
// keeps everything the run produced even when Run fails: the metrics logged so
// far and the last saved checkpoint.
func Run(ctx context.Context, cfg Config, hooks Hooks) (Summary, error) {
	began := time.Now()
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	logf := func(format string, a ...any) {
		if hooks.Log != nil {
			hooks.Log(fmt.Sprintf(format, a...))
		}
	}
	base, err := loadBase(cfg.BaseModel)
	if err != nil {
		return Summary{}, err
	}
	dir, err := newRunDir(cfg.Dir, cfg.Name)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Run: cfg.Name, Dir: dir, MaxStaleness: cfg.RL.MaxStaleness, TargetAccuracy: cfg.TargetAccuracy,
		AccuracyMeasure: fmt.Sprintf("one sample per held-out problem at the training temperature %g, graded by final-integer match (the reward's correctness term)", cfg.RL.Sampling.Temperature)}
	rlog, err := runlog.Open(dir, cfg)
	if err != nil {
		return sum, err
	}
	defer rlog.Close()
	store, err := checkpoint.Open(filepath.Join(dir, "checkpoints"))
	if err != nil {
		return sum, err
	}

	var plug scorer
	if p := cfg.RewardPlugin; p != nil {
		if len(p.Command) > 0 {
			pr, err := plugin.NewProc(plugin.ProcConfig{Command: p.Command, Timeout: p.Timeout})
			if err != nil {
				return sum, err
			}
			defer pr.Close()
			plug = pr
		} else {
			h, err := plugin.NewHTTP(plugin.HTTPConfig{URL: p.URL, Timeout: p.Timeout})
			if err != nil {
				return sum, err
			}
			plug = h
		}
	}
	fn, err := arithmeticReward(cfg, plug)
	if err != nil {
		return sum, err
	}

	shelf := &local.Shelf{Keep: cfg.RL.Steps + 4}
	run := cfg.Name
	rlc := cfg.RL
	rlc.Run = run
	trainer, err := local.NewTrainer(base, local.TrainerOptions{Run: run, Threads: cfg.TrainerThreads, Lora: cfg.Lora, Shelf: shelf, Store: store, BaseModel: basemodel.Name})
	if err != nil {
		return sum, err
	}
	defer trainer.Close()
	samplers := make([]rl.Sampler, cfg.Samplers)
	for i := range samplers {
		s, err := local.NewSampler(base, local.SamplerOptions{Threads: cfg.SamplerThreads, Shelf: shelf, Store: store, Seed: uint64(cfg.RL.Seed) + uint64(i)})
		if err != nil {
			return sum, err
		}
		samplers[i] = s
	}

	// The base, measured before anything trains.
	held := heldOut(cfg.EvalProblems)
	sum.HeldOutProblems = len(held)
	baseEval, err := evaluate(ctx, base, shelf, nil, cfg, held)
	if err != nil {
		return sum, err
	}
	sum.BaseAccuracy = baseEval
	logf("base model: held-out accuracy %.3f (%d problems)", baseEval, len(held))

	// The loop, with an observer that logs, shows progress and keeps
	// snapshots of the versions to evaluate.
	var (
		mu        sync.Mutex
		snapshots = map[policy.Version]EvalPoint{}
		staleSum  float64
		staleN    int
		gapSum    float64
		gapN      int
	)
	registry := &policy.Registry{}
	trainStart := time.Now()
	observer := func(m loop.StepMetrics) {
		secs := time.Since(trainStart).Seconds()
		rec := runlog.Record{
			Step: m.Step, Version: int64(m.Version), Seconds: secs, RewardMean: m.MeanReward,
			Loss: m.Metrics["loss:sum"], Staleness: map[int]int{}, MaxStaleness: m.MaxStaleness,
			Dropped: int(m.Dropped), Requeued: int(m.Requeued), Samples: m.Samples, Tokens: m.Tokens,
			ServedVersion: int64(m.Served), Extra: map[string]float64{},
		}
		if m.LogprobGapValid {
			rec.LogprobGap = m.LogprobGap
		}
		if t := m.Total.Seconds(); t > 0 {
			rec.TokensPerSec, rec.SamplesPerSec = float64(m.Tokens)/t, float64(m.Samples)/t
		}
		for s, n := range m.Staleness {
			if n > 0 {
				rec.Staleness[s] = n
			}
		}
		for k, v := range m.Metrics {
			rec.Extra[k] = v
		}
		rec.Extra["time:wait_s"] = m.Wait.Seconds()
		rec.Extra["time:train_s"] = m.Train.Seconds()
		rec.Extra["time:publish_s"] = m.Publish.Seconds()
		mu.Lock()
		for s, n := range m.Staleness {
			staleSum += float64(s * n)
			staleN += n
		}
		if m.LogprobGapValid {
			gapSum += m.LogprobGap
			gapN++
		}
		sum.MaxStalenessSeen = max(sum.MaxStalenessSeen, m.MaxStaleness)
		sum.Dropped, sum.Requeued = m.Dropped, m.Requeued
		sum.Samples += m.Samples
		sum.FinalReward = m.MeanReward
		done := m.Step + 1
		if (cfg.EvalEvery > 0 && done%cfg.EvalEvery == 0) || done == cfg.RL.Steps {
			snapshots[m.Version] = EvalPoint{Step: done, Version: m.Version, Seconds: secs}
		}
		meanStale := 0.0
		if staleN > 0 {
			meanStale = staleSum / float64(staleN)
		}
		mu.Unlock()
		if err := rlog.Log(rec); err != nil {
			logf("metrics: %v", err)
		}
		if hooks.Progress != nil {
			hooks.Progress(progress.Status{Step: done, Total: cfg.RL.Steps, Reward: m.MeanReward, MaxStaleness: m.MaxStaleness,
				MeanStale: meanStale, TokensPerSec: rec.TokensPerSec, Dropped: int(m.Dropped)})
		}
		if m.Checkpoint != nil {
			logf("step %d: saved %s", done, m.Checkpoint.URI)
		}
	}
	grpo, err := algo.New(cfg.Algo, localbase.Base{Trainer: trainer})
	if err != nil {
		return sum, err
	}
	lp, err := loop.New(rlc, loop.Deps{
		Trainer: trainer, Samplers: samplers, Dataset: arithmeticDataset(cfg.RL.Seed, fn, 0),
		Algorithm: grpo,
		Registry:  registry, Observer: observer, Decode: tok.Decode, Logger: hooks.Logger,
	})
	if err != nil {
		return sum, err
	}
	runErr := lp.Run(ctx)
	rep := lp.Report()
	sum.TrainSeconds = time.Since(trainStart).Seconds()
	sum.Steps = rep.Steps
	if sum.TrainSeconds > 0 {
		sum.SamplesPerSecond = float64(sum.Samples) / sum.TrainSeconds
	}
	if staleN > 0 {
		sum.MeanStaleness = staleSum / float64(staleN)
	}
	if gapN > 0 {
		sum.MeanLogprobGap = gapSum / float64(gapN)
	}
	// Keep what the run reached, even when it failed: the last step's state.
	saveCtx := context.WithoutCancel(ctx)
	final, saveErr := trainer.SaveForSampler(saveCtx, "final").Wait(saveCtx)
	if saveErr == nil {
		if _, err := store.Get(run, policy.SamplerWeights, "final"); err != nil {
			saveErr = persistSampler(saveCtx, trainer, store, final)
		}
	}
	if _, err := trainer.SaveState(saveCtx, "final").Wait(saveCtx); err != nil && saveErr == nil {
		saveErr = err
	}
	if saveErr != nil {
		logf("saving the final checkpoint: %v", saveErr)
	} else if ck, err := store.Get(run, policy.SamplerWeights, "final"); err == nil {
		sum.Checkpoint = ck.Dir
	}
	if runErr != nil {
		sum.WallSeconds = time.Since(began).Seconds()
		_ = rlog.WriteJSON("summary.json", sum)
		return sum, fmt.Errorf("train: %w (run folder %s keeps the metrics and the last checkpoint)", runErr, dir)
	}

	// Evaluate the snapshots, now that timing no longer matters.
	versions := make([]policy.Version, 0, len(snapshots))
	for v := range snapshots {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	for _, v := range versions {
		ref, ok := registry.Get(v)
		if !ok {
			continue
		}
		acc, err := evaluate(ctx, base, shelf, &ref, cfg, held)
		if err != nil {
			return sum, err
		}
		pt := snapshots[v]
		pt.Accuracy = acc
		sum.Evals = append(sum.Evals, pt)
		rlog.SetAccuracy(pt.Step-1, acc)
		if acc >= cfg.TargetAccuracy && sum.TimeToTargetSeconds == nil {
			s := pt.Seconds
			sum.TimeToTargetSeconds = &s
		}
		logf("step %d (version %d): held-out accuracy %.3f", pt.Step, v, acc)
	}
	if n := len(sum.Evals); n > 0 {
		sum.FinalAccuracy = sum.Evals[n-1].Accuracy
	}
	sum.WallSeconds = time.Since(began).Seconds()
	if err := rlog.WriteJSON("summary.json", sum); err != nil {
		return sum, err
	}
	return sum, nil
}

// evaluate measures held-out accuracy of the version ref names (nil: the
// base alone), served from the shelf by a private sampler using every core
// the job was given.
func evaluate(ctx context.Context, base *engine.Model[float32], shelf *local.Shelf, ref *policy.Ref, cfg Config, held []arithmetic.Problem) (float64, error) {
	s, err := local.NewSampler(base, local.SamplerOptions{Threads: cfg.TrainerThreads + cfg.SamplerThreads, Shelf: shelf})
	if err != nil {
		return 0, err
	}
	if ref != nil {
		if err := s.Load(ctx, *ref); err != nil {
			return 0, err
		}
	}
	res, err := arithmetic.Evaluate(ctx, s, tok, []int{engine.BOS}, held, cfg.RL.Sampling, cfg.RL.Seed*7919, 1)
	return res.Accuracy, err
}

func persistSampler(ctx context.Context, t *local.Trainer, store *checkpoint.Store, ref policy.Ref) error {
	_, err := t.Do(ctx, func(ctx context.Context, eng *engine.Trainer[float32]) error {
		_, err := store.Save(ctx, checkpoint.Meta{Run: ref.Run, Name: ref.Name, Kind: policy.SamplerWeights, Version: ref.Version, Step: int64(ref.Version), BaseModel: basemodel.Name},
			func(dir string) error { return eng.SaveAdapter(dir) })
		return err
	}).Wait(ctx)
	return err
}

func loadBase(path string) (*engine.Model[float32], error) {
	if path == "" {
		return basemodel.Load()
	}
	return engine.LoadBase[float32](path)
}

// newRunDir returns dir/name, or dir/name-2, -3, … when taken: a new run
// never writes into an old one's folder.
func newRunDir(dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for i := 1; i < 10000; i++ {
		p := filepath.Join(dir, name)
		if i > 1 {
			p += "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(p, 0o755)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("train: no free run folder for %s under %s", name, dir)
}
