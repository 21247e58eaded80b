package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tandemrl/tandem/internal/atomicfile"
	"github.com/tandemrl/tandem/ledger"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/progress"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl/algo"
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

// logf formats a message for h.Log, if set.
func (h Hooks) logf(format string, a ...any) {
	if h.Log != nil {
		h.Log(fmt.Sprintf(format, a...))
	}
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
	// Ledger summarises what became of every prompt handed out (the run
	// folder's ledger.jsonl has one line per prompt).
	Ledger *ledger.Summary `json:"ledger"`
}

// Run runs the job cfg describes and returns its summary. The run folder
// keeps everything the run produced even when Run fails: the metrics logged
// so far and the last saved checkpoint. The steps, in order: load the base
// model, create the run folder and its log, build the reward and the
// backends, evaluate the base, train, save the final checkpoint, evaluate
// the marked versions, write the summary; an error names its step
// ("train: evaluation: …").
func Run(ctx context.Context, cfg Config, hooks Hooks) (Summary, error) {
	began := time.Now()
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return Summary{}, fmt.Errorf("train: config: %w", err)
	}
	mdl, err := loadModel(cfg)
	if err != nil {
		return Summary{}, fmt.Errorf("train: base model: %w", err)
	}
	cfg.RL.Sampling = mdl.sampling(cfg.RL.Sampling)
	dir, err := newRunDir(cfg.Dir, cfg.Name)
	if err != nil {
		return Summary{}, fmt.Errorf("train: run folder: %w", err)
	}
	sum := newSummary(cfg, dir)
	rlog, err := runlog.Open(dir, cfg)
	if err != nil {
		return sum, fmt.Errorf("train: run log: %w", err)
	}
	defer rlog.Close()
	samples, err := runlog.OpenSamples(dir)
	if err != nil {
		return sum, fmt.Errorf("train: run log: %w", err)
	}
	rollouts := &rolloutLog{out: samples, every: cfg.SamplesEvery, decodePrompt: mdl.decodePrompt, decode: mdl.w.Decode}
	defer rollouts.close()
	fn, stopReward, err := newReward(cfg, mdl)
	if err != nil {
		return sum, fmt.Errorf("train: reward: %w", err)
	}
	defer stopReward()
	be, err := newBackends(ctx, cfg, mdl, dir)
	if err != nil {
		return sum, fmt.Errorf("train: backends: %w", err)
	}
	defer be.close()

	// The base, measured before anything trains.
	held := heldOut(cfg.EvalProblems)
	sum.HeldOutProblems = len(held)
	if sum.BaseAccuracy, err = be.evaluate(ctx, nil, cfg, held); err != nil {
		return sum, fmt.Errorf("train: base evaluation: %w", err)
	}
	hooks.logf("base model: held-out accuracy %.3f (%d problems)", sum.BaseAccuracy, len(held))

	obs := newObserver(cfg, rlog, hooks)
	registry := &policy.Registry{}
	led := &ledger.Ledger{}
	lp, err := newLoop(cfg, mdl, be, fn, registry, obs, led, rollouts)
	if err != nil {
		return sum, fmt.Errorf("train: loop: %w", err)
	}
	runErr := lp.Run(ctx)
	sum.TrainSeconds = time.Since(obs.start).Seconds()
	sum.Steps = lp.Report().Steps
	sum.Ledger = lp.Report().Ledger
	ledErr := writeLedger(dir, led)
	samplesErr := rollouts.close()
	obs.fill(&sum)
	if sum.TrainSeconds > 0 {
		sum.SamplesPerSecond = float64(sum.Samples) / sum.TrainSeconds
	}

	// Keep what the run reached, even when it failed.
	if ck, err := be.saveFinal(ctx, cfg.Name); err != nil {
		hooks.logf("saving the final checkpoint: %v", err)
	} else {
		sum.Checkpoint = ck
	}
	if runErr != nil {
		sum.WallSeconds = time.Since(began).Seconds()
		_ = rlog.WriteJSON("summary.json", sum)
		return sum, fmt.Errorf("train: %w (run folder %s keeps the metrics, the ledger and the last checkpoint)", runErr, dir)
	}
	if ledErr != nil {
		return sum, fmt.Errorf("train: ledger: %w", ledErr)
	}
	if samplesErr != nil {
		return sum, fmt.Errorf("train: samples: %w", samplesErr)
	}
	if err := evaluateSnapshots(ctx, cfg, be, registry, obs.snapshotList(), held, rlog, hooks, &sum); err != nil {
		return sum, fmt.Errorf("train: evaluation: %w", err)
	}
	sum.WallSeconds = time.Since(began).Seconds()
	if err := rlog.WriteJSON("summary.json", sum); err != nil {
		return sum, fmt.Errorf("train: summary: %w", err)
	}
	return sum, nil
}

// newSummary is the summary of a job before it runs.
func newSummary(cfg Config, dir string) Summary {
	return Summary{Run: cfg.Name, Dir: dir, MaxStaleness: cfg.RL.MaxStaleness, TargetAccuracy: cfg.TargetAccuracy,
		AccuracyMeasure: fmt.Sprintf("one sample per held-out problem at the training temperature %g, graded by final-integer match (the reward's correctness term)",
			cfg.RL.Sampling.Temperature)}
}

// newLoop builds the job's loop: GRPO as cfg.Algo configures it, with the
// trainer scoring the KL penalty's base log-probs itself, on the task's
// training dataset shuffled with the run's seed and scored by fn. Every
// published version is recorded in registry; obs sees every step.
func newLoop(cfg Config, mdl *model, be *backends, fn reward.Func, registry *policy.Registry, obs *observer, led *ledger.Ledger, rollouts *rolloutLog) (*loop.Loop, error) {
	grpo, err := algo.New(cfg.Algo, be.trainer)
	if err != nil {
		return nil, fmt.Errorf("algorithm: %w", err)
	}
	data, err := arithmetic.DatasetFor(mdl.w, cfg.RL.Seed, fn)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	rlc := cfg.RL
	rlc.Run = cfg.Name
	return loop.New(rlc, loop.Deps{
		Trainer: be.trainer, Samplers: be.samplers, Dataset: data, Algorithm: grpo,
		Registry: registry, Observer: obs.observe, Decode: mdl.w.Decode, Logger: obs.hooks.Logger,
		Ledger: led, Rollouts: rollouts.log,
	})
}

// writeLedger writes led's entries to dir/ledger.jsonl, atomically.
func writeLedger(dir string, led *ledger.Ledger) error {
	b, err := ledger.JSONL(led.Entries())
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "ledger.jsonl"), b)
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
