package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/rollout"
)

// ThroughputSettings is the throughput sweep on the simulated backend: the
// trainer takes TrainerTime per step; each group's generation takes a
// log-normal time (median GenMedian, log standard deviation GenSigma) on one
// of Replicas sampler replicas, each able to run Slots generations at once.
type ThroughputSettings struct {
	Ks             []int            `json:"ks"`
	Policies       []rl.StalePolicy `json:"policies"`
	Steps          int              `json:"steps"`
	GroupsPerBatch int              `json:"groups_per_batch"`
	GroupSize      int              `json:"group_size"`
	TrainerTime    time.Duration    `json:"trainer_time_ns"`
	GenMedian      time.Duration    `json:"gen_median_ns"`
	GenSigma       float64          `json:"gen_sigma"`
	Replicas       int              `json:"replicas"`
	Slots          int              `json:"slots_per_replica"`
	Seed           uint64           `json:"seed"`
	// Tolerance is the allowed relative gap between the measured and the
	// ideal speed-up (0.05).
	Tolerance float64 `json:"tolerance"`
}

// Ideal is the simulated ideal: S is the mean time to generate one batch
// (Monte Carlo over the latency model, the replicas and their slots), T the
// trainer time per step. Synchronous RL takes T+S per step; asynchronous RL
// max(T, S) per step once its pipeline is full, plus S to generate the first
// batch, so a run of N steps ideally takes N(T+S) synchronously and
// N·max(T,S) + S asynchronously.
type Ideal struct {
	BatchSeconds      float64 `json:"batch_seconds"` // S
	TrainerSeconds    float64 `json:"trainer_seconds"`
	SyncStepSeconds   float64 `json:"sync_step_seconds"`
	AsyncStepSeconds  float64 `json:"async_step_seconds"`
	SyncRunSeconds    float64 `json:"sync_run_seconds"`
	AsyncRunSeconds   float64 `json:"async_run_seconds"`
	Speedup           float64 `json:"speedup"` // SyncRunSeconds / AsyncRunSeconds
	MonteCarloBatches int     `json:"monte_carlo_batches"`
}

// ThroughputCell is one (policy, k) run.
type ThroughputCell struct {
	Policy         rl.StalePolicy `json:"policy"`
	K              int            `json:"k"`
	Steps          int            `json:"steps"`
	Seconds        float64        `json:"seconds"`
	StepsPerSecond float64        `json:"steps_per_second"`
	// WastedSamples counts samples generated and then thrown away because
	// their group became too stale (dropped or requeued groups × group
	// size).
	WastedSamples int64 `json:"wasted_samples"`
	// TrainedSamples counts the samples the learner trained on.
	TrainedSamples int64 `json:"trained_samples"`
	// LearnerIdle is the fraction of the run the learner spent waiting for
	// a batch.
	LearnerIdle   float64 `json:"learner_idle_fraction"`
	MeanStaleness float64 `json:"mean_staleness"`
	MaxStaleness  int     `json:"max_staleness"`
	// Speedup is this cell's steps/s over the synchronous reference run
	// (ThroughputTable.SyncReference); OwnSpeedup over the same policy's
	// k = 0 cell. IdealSpeedup is 1 at k = 0 and N(T+S) / (N·max(T,S) + S)
	// above.
	Speedup      float64 `json:"speedup"`
	OwnSpeedup   float64 `json:"own_speedup"`
	IdealSpeedup float64 `json:"ideal_speedup"`
	// IdealStepsPerSecond is N over the ideal run time (N(T+S) at k = 0,
	// N·max(T,S) + S above); Efficiency is StepsPerSecond over it.
	IdealStepsPerSecond float64 `json:"ideal_steps_per_second"`
	Efficiency          float64 `json:"efficiency"`
	// SpeedupRatio is Speedup / IdealSpeedup; WithinTolerance says whether
	// it is within Tolerance of 1.
	SpeedupRatio    float64 `json:"speedup_ratio"`
	WithinTolerance bool    `json:"within_tolerance"`
}

// ThroughputTable is the throughput sweep's result.
type ThroughputTable struct {
	Settings ThroughputSettings `json:"settings"`
	Ideal    Ideal              `json:"ideal"`
	Cells    []ThroughputCell   `json:"cells"`
	// PaceWithin says whether every asynchronous pace cell's speed-up is
	// within Tolerance of the ideal; AllWithin the same for every policy.
	PaceWithin bool `json:"pace_within_tolerance"`
	// SyncReference names the run speed-ups are measured against.
	SyncReference string  `json:"sync_reference"`
	AllWithin     bool    `json:"all_within_tolerance"`
	Seconds       float64 `json:"seconds"`
}

// idealTimes computes the ideal by Monte Carlo: each batch sends its groups
// round-robin to the replicas; a replica runs its share on its slots,
// each generation starting when a slot frees (greedy list scheduling); the
// batch is done when the last generation is.
func idealTimes(s ThroughputSettings, batches int) Ideal {
	rng := rand.New(rand.NewPCG(s.Seed^0x1dea1, 7))
	median := s.GenMedian.Seconds()
	var total float64
	slotEnds := make([]float64, s.Slots)
	for range batches {
		makespan := 0.0
		for r := range s.Replicas {
			clear(slotEnds)
			for g := r; g < s.GroupsPerBatch; g += s.Replicas {
				i := slices.Index(slotEnds, slices.Min(slotEnds)) // earliest free slot
				slotEnds[i] += median * math.Exp(s.GenSigma*rng.NormFloat64())
			}
			makespan = max(makespan, slices.Max(slotEnds))
		}
		total += makespan
	}
	S := total / float64(batches)
	T := s.TrainerTime.Seconds()
	n := float64(s.Steps)
	id := Ideal{BatchSeconds: S, TrainerSeconds: T, SyncStepSeconds: T + S, AsyncStepSeconds: max(T, S), MonteCarloBatches: batches}
	id.SyncRunSeconds = n * id.SyncStepSeconds
	id.AsyncRunSeconds = n*id.AsyncStepSeconds + S
	id.Speedup = id.SyncRunSeconds / id.AsyncRunSeconds
	return id
}

// replica is a simulated sampler replica with a bounded number of slots:
// at most cap(slots) generations run at once and further calls queue for a
// slot. Like a request to an inference server that names its adapter, a
// call samples the version served when it was made, even if it waits for a
// slot meanwhile. Log-probabilities are sim.LogProb's, so they match the
// simulated trainer's at the same version. Safe for concurrent use.
type replica struct {
	version atomic.Int64
	slots   chan struct{}
	latency sim.Latency
	tokens  int
	seed    uint64
	calls   atomic.Uint64
}

func newReplica(slots, tokens int, latency sim.Latency, seed uint64) *replica {
	return &replica{slots: make(chan struct{}, slots), latency: latency, tokens: tokens, seed: seed}
}

// Sample implements rl.Sampler: n completions of r.tokens pseudo-random
// tokens (at most p.MaxTokens) after one latency draw.
func (r *replica) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	if n < 1 {
		return rl.SampleOutput{}, fmt.Errorf("replica: sample n=%d; must be ≥ 1", n)
	}
	v := policy.Version(r.version.Load())
	call := r.calls.Add(1)
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return rl.SampleOutput{}, context.Cause(ctx)
	}
	defer func() { <-r.slots }()
	t := time.NewTimer(r.latency())
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return rl.SampleOutput{}, context.Cause(ctx)
	}
	m := r.tokens
	if p.MaxTokens > 0 {
		m = min(m, p.MaxTokens)
	}
	plen := prompt.Len()
	h := r.seed*0x9e3779b97f4a7c15 + call
	seqs := make([]rl.Sequence, n)
	for i := range seqs {
		toks, lps := make([]int, m), make([]float64, m)
		for j := range toks {
			h = splitmix(h)
			toks[j] = int(h % 256)
			lps[j] = sim.LogProb(v, toks[j], plen+j)
		}
		seqs[i] = rl.Sequence{Tokens: toks, Logprobs: lps, StopReason: rl.StopLength}
	}
	return rl.SampleOutput{Sequences: seqs, Version: v}, nil
}

// Load implements rl.Sampler: calls made from now on sample ref.Version.
func (r *replica) Load(_ context.Context, ref policy.Ref) error {
	r.version.Store(int64(ref.Version))
	return nil
}

// splitmix is one step of the splitmix64 generator.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// runThroughputCell runs one loop on the simulated backend.
func runThroughputCell(ctx context.Context, s ThroughputSettings, pol rl.StalePolicy, k int) (ThroughputCell, error) {
	cfg := rl.Config{GroupsPerBatch: s.GroupsPerBatch, GroupSize: s.GroupSize, Steps: s.Steps, MaxStaleness: k,
		StalePolicy: pol, Watchdog: time.Hour, Seed: int64(s.Seed)}
	tr := sim.NewTrainer(sim.TrainerConfig{ForwardBackward: sim.Fixed(s.TrainerTime)})
	samplers := make([]rl.Sampler, s.Replicas)
	for i := range samplers {
		seed := s.Seed*1000 + uint64(i)
		samplers[i] = newReplica(s.Slots, 4, sim.LogNormal(s.GenMedian, s.GenSigma, seed), seed)
	}
	// Enough prompts for every step, every requeue and every drop.
	n := (s.Steps + k + 2) * s.GroupsPerBatch * 4
	items := make([]rollout.Problem, n)
	score := reward.Func(func(_ context.Context, smp reward.Sample) (float64, error) { return float64(smp.Tokens[0] & 1), nil })
	for i := range items {
		items[i] = &rollout.SingleTurn{ID: strconv.Itoa(i), Prompt: rl.Tokens([]int{i & 255, 1, 2}), Reward: score}
	}
	var (
		wait          time.Duration
		staleSum      float64
		staleN        int
		maxSt         int
		trainedGroups int
	)
	l, err := loop.New(cfg, loop.Deps{Trainer: tr, Samplers: samplers, Dataset: rollout.NewSliceDataset(items, 0, 1),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observer: func(m loop.StepMetrics) {
			wait += m.Wait
			maxSt = max(maxSt, m.MaxStaleness)
			trainedGroups += m.Groups
			for st, c := range m.Staleness {
				staleSum += float64(st * c)
				staleN += c
			}
		}})
	if err != nil {
		return ThroughputCell{}, err
	}
	if err := l.Run(ctx); err != nil {
		return ThroughputCell{}, fmt.Errorf("throughput cell policy=%s k=%d: %w", pol, k, err)
	}
	rep := l.Report() // Run has returned: the observer has delivered every step
	c := ThroughputCell{Policy: pol, K: k, Steps: rep.Steps, Seconds: rep.Elapsed.Seconds(), MaxStaleness: maxSt,
		WastedSamples:  (rep.Buffer.Dropped + rep.Buffer.Requeued) * int64(s.GroupSize),
		TrainedSamples: int64(trainedGroups * s.GroupSize)}
	if c.Seconds > 0 {
		c.StepsPerSecond = float64(c.Steps) / c.Seconds
		c.LearnerIdle = wait.Seconds() / c.Seconds
	}
	if staleN > 0 {
		c.MeanStaleness = staleSum / float64(staleN)
	}
	return c, nil
}

// runThroughput runs every (policy, k) cell and compares each speed-up over
// the policy's k = 0 cell with the ideal.
func runThroughput(ctx context.Context, s ThroughputSettings, progress func(string)) (ThroughputTable, error) {
	began := time.Now()
	tab := ThroughputTable{Settings: s, Ideal: idealTimes(s, 20000)}
	if progress != nil {
		id := tab.Ideal
		progress(fmt.Sprintf("throughput ideal: S = %.1f ms per batch (Monte Carlo), T = %.1f ms: %d steps take %.3fs sync (T+S per step), %.3fs async (max(T,S) per step + S to fill), speed-up %.3f",
			1e3*id.BatchSeconds, 1e3*id.TrainerSeconds, s.Steps, id.SyncRunSeconds, id.AsyncRunSeconds, id.Speedup))
	}
	for _, pol := range s.Policies {
		for _, k := range s.Ks {
			c, err := runThroughputCell(ctx, s, pol, k)
			if err != nil {
				return tab, err
			}
			tab.Cells = append(tab.Cells, c)
			if progress != nil {
				progress(fmt.Sprintf("throughput %-7s k=%d: %.3f steps/s, wasted %d samples, learner idle %.1f%%, mean staleness %.2f",
					pol, k, c.StepsPerSecond, c.WastedSamples, 100*c.LearnerIdle, c.MeanStaleness))
			}
		}
	}
	tab.score()
	tab.Seconds = time.Since(began).Seconds()
	return tab, nil
}

// score fills every cell's ideal, efficiency and speed-ups and the table's
// verdicts. The synchronous reference is the pace k = 0 cell (pace admits
// exactly one batch per version); without one each policy's own k = 0
// cell serves.
func (t *ThroughputTable) score() {
	s, id := t.Settings, t.Ideal
	own := map[rl.StalePolicy]float64{}
	var ref float64
	for _, c := range t.Cells {
		if c.K == 0 {
			own[c.Policy] = c.StepsPerSecond
			if c.Policy == rl.Pace {
				ref = c.StepsPerSecond
			}
		}
	}
	t.SyncReference = "pace k=0"
	if ref == 0 {
		t.SyncReference = "each policy's k=0"
	}
	t.AllWithin, t.PaceWithin = true, true
	for i := range t.Cells {
		c := &t.Cells[i]
		c.IdealSpeedup, c.IdealStepsPerSecond = 1, float64(s.Steps)/id.SyncRunSeconds
		if c.K > 0 {
			c.IdealSpeedup, c.IdealStepsPerSecond = id.Speedup, float64(s.Steps)/id.AsyncRunSeconds
		}
		c.Efficiency = c.StepsPerSecond / c.IdealStepsPerSecond
		base := ref
		if base == 0 {
			base = own[c.Policy]
		}
		if base > 0 {
			c.Speedup = c.StepsPerSecond / base
			c.SpeedupRatio = c.Speedup / c.IdealSpeedup
			c.WithinTolerance = math.Abs(c.SpeedupRatio-1) <= s.Tolerance
		}
		if b := own[c.Policy]; b > 0 {
			c.OwnSpeedup = c.StepsPerSecond / b
		}
		if c.K > 0 && !c.WithinTolerance {
			t.AllWithin = false
			if c.Policy == rl.Pace {
				t.PaceWithin = false
			}
		}
	}
}

// Markdown renders the throughput table.
func (t ThroughputTable) Markdown() string {
	s, id := t.Settings, t.Ideal
	header := []string{"policy", "k", "steps/s", "% of ideal steps/s", "speed-up vs sync", "ideal speed-up", "measured/ideal", "vs own k=0", "wasted samples", "learner idle", "mean staleness", "max staleness"}
	rows := make([][]string, 0, len(t.Cells))
	for _, c := range t.Cells {
		ok := ""
		if c.K > 0 && !c.WithinTolerance {
			ok = " ✗"
		}
		rows = append(rows, []string{
			string(c.Policy), strconv.Itoa(c.K), fmt.Sprintf("%.3f", c.StepsPerSecond), fmt.Sprintf("%.1f%%", 100*c.Efficiency), fmt.Sprintf("%.3f", c.Speedup),
			fmt.Sprintf("%.3f", c.IdealSpeedup), fmt.Sprintf("%.3f%s", c.SpeedupRatio, ok), fmt.Sprintf("%.3f", c.OwnSpeedup), strconv.FormatInt(c.WastedSamples, 10),
			fmt.Sprintf("%.1f%%", 100*c.LearnerIdle), fmt.Sprintf("%.2f", c.MeanStaleness), strconv.Itoa(c.MaxStaleness),
		})
	}
	return fmt.Sprintf("### Throughput sweep (simulated backend)\n\n"+
		"%d steps × %d groups × %d samples; trainer T = %v per step; generation log-normal, median %v, σ = %g; "+
		"%d replicas × %d slots, a request samples the version served when it was made. "+
		"Ideal (S by Monte Carlo over %d batches): S = %.1f ms per batch; sync T+S = %.1f ms per step; async max(T,S) = %.1f ms per step "+
		"plus S once to fill the pipeline; speed-up over %d steps %.3f. "+
		"Speed-ups are over the synchronous reference (%s); ✗ marks an asynchronous cell more than %.0f%% from the ideal speed-up. "+
		"Wasted samples are those of groups that expired (dropped or requeued): pace never lets a group expire, while drop and "+
		"requeue, at k ≥ 1, admit whenever the sampler is at most k versions behind and lose what waits too long in a full buffer.\n\n%s",
		s.Steps, s.GroupsPerBatch, s.GroupSize, s.TrainerTime, s.GenMedian, s.GenSigma, s.Replicas, s.Slots, id.MonteCarloBatches,
		1e3*id.BatchSeconds, 1e3*id.SyncStepSeconds, 1e3*id.AsyncStepSeconds, s.Steps, id.Speedup, t.SyncReference, 100*s.Tolerance, mdTable(header, rows))
}
