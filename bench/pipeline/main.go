// Command pipeline measures tandem's orchestration on the simulated
// backend: how close synchronous and asynchronous runs come to their ideal
// times, the speed-up of asynchronous RL, the staleness it ran at, the
// orchestration cost per sample with zero-latency backends, and how many
// rollouts it can hold in flight.
//
//	go run ./bench/pipeline -json
//
// Human-readable lines go first; with -json the last line is one JSON
// object.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/ledger"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/rollout"
)

// Result is the JSON line.
type Result struct {
	TrainerMS              float64 `json:"trainer_ms"`
	SamplerMS              float64 `json:"sampler_ms"`
	Steps                  int     `json:"steps"`
	GroupsPerBatch         int     `json:"groups_per_batch"`
	GroupSize              int     `json:"group_size"`
	SyncSeconds            float64 `json:"sync_seconds"`
	AsyncSeconds           float64 `json:"async_seconds"`
	SyncEfficiency         float64 `json:"sync_efficiency"`
	AsyncEfficiency        float64 `json:"async_efficiency"`
	Speedup                float64 `json:"speedup"`
	MaxStalenessSeen       int     `json:"max_staleness_seen"`
	OverheadUSPerSample    float64 `json:"overhead_us_per_sample"`
	OverheadCPUUSPerSample float64 `json:"overhead_cpu_us_per_sample"`
	OverheadSamples        int64   `json:"overhead_samples"`
	ConcurrentRollouts     int64   `json:"concurrent_rollouts"`
	ConcurrentTarget       int     `json:"concurrent_target"`
	ConcurrentSeconds      float64 `json:"concurrent_seconds"`
	GOMAXPROCS             int     `json:"gomaxprocs"`
	LoadAverage            string  `json:"load_average"` // /proc/loadavg at the end: the machine may be shared
	OverheadGroups         int     `json:"overhead_groups_per_batch"`
	OverheadWorkers        int     `json:"overhead_workers"`
	OverheadMaxStaleness   int     `json:"overhead_max_staleness"`
	// Pool is the sampler pool (samplerpool) over 1–64 simulated replicas
	// with long-tailed latencies.
	Pool []PoolLevel `json:"pool,omitempty"`
}

func main() {
	var (
		asJSON     = flag.Bool("json", false, "print a JSON object on the last line")
		trainerT   = flag.Duration("T", 200*time.Millisecond, "simulated trainer time per step")
		samplerS   = flag.Duration("S", 200*time.Millisecond, "simulated sampler time per call")
		steps      = flag.Int("steps", 40, "learner steps of the sync and async runs")
		groups     = flag.Int("groups", 64, "groups per batch")
		groupSize  = flag.Int("group-size", 8, "samples per group")
		ovSteps    = flag.Int("overhead-steps", 2000, "steps of the zero-latency overhead run")
		ovWorkers  = flag.Int("overhead-workers", 64, "workers of the overhead run")
		ovK        = flag.Int("overhead-k", 2, "max staleness of the overhead run")
		ovReps     = flag.Int("overhead-reps", 5, "repetitions of the overhead run (the fastest is reported)")
		concurrent = flag.Int("concurrent", 100_000, "rollouts to hold in flight at once (0 = skip)")
		tokens     = flag.Int("tokens", 4, "completion tokens per sample")
		cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
		only       = flag.String("only", "", "run only this part: sync, async, overhead, concurrent or pool")
		withLedger = flag.Bool("ledger", false, "keep a per-prompt ledger (as tandem train does) in the runs")
		poolSizes  = flag.String("pool", "1,4,16,64", "replica counts of the sampler-pool part (empty = skip)")
		poolCalls  = flag.Int("pool-calls", 64, "calls per replica in the pool part")
		poolMedian = flag.Duration("pool-median", 5*time.Millisecond, "median call latency of the pool part (log-normal, sigma 1)")
	)
	flag.Parse()
	keepLedger = *withLedger
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	res := Result{TrainerMS: ms(*trainerT), SamplerMS: ms(*samplerS), Steps: *steps, GroupsPerBatch: *groups,
		GroupSize: *groupSize, GOMAXPROCS: runtime.GOMAXPROCS(0), OverheadGroups: *groups,
		OverheadWorkers: *ovWorkers, OverheadMaxStaleness: *ovK, ConcurrentTarget: *concurrent}

	base := rl.Config{GroupsPerBatch: *groups, GroupSize: *groupSize, Steps: *steps, Watchdog: time.Hour}

	want := func(part string) bool { return *only == "" || *only == part }

	// Synchronous: k = 0, every step samples then trains.
	if want("sync") || want("async") {
		syncCfg := base
		syncCfg.MaxStaleness = 0
		syncRep, _, err := run(ctx, syncCfg, *trainerT, *samplerS, *tokens, false)
		check(err)
		ideal := float64(*steps) * (trainerT.Seconds() + samplerS.Seconds())
		res.SyncSeconds = syncRep.Elapsed.Seconds()
		res.SyncEfficiency = ideal / res.SyncSeconds
		fmt.Printf("sync  k=0: %d steps in %.3fs, ideal %.3fs, efficiency %.3f\n", *steps, res.SyncSeconds, ideal, res.SyncEfficiency)

		// Asynchronous: k = 1, sampling overlaps training.
		asyncCfg := base
		asyncCfg.MaxStaleness = 1
		asyncRep, maxSt, err := run(ctx, asyncCfg, *trainerT, *samplerS, *tokens, false)
		check(err)
		idealAsync := float64(*steps)*max(trainerT.Seconds(), samplerS.Seconds()) + samplerS.Seconds()
		res.AsyncSeconds = asyncRep.Elapsed.Seconds()
		res.AsyncEfficiency = idealAsync / res.AsyncSeconds
		res.Speedup = res.SyncSeconds / res.AsyncSeconds
		res.MaxStalenessSeen = maxSt
		fmt.Printf("async k=1: %d steps in %.3fs, ideal %.3fs, efficiency %.3f, speed-up %.2f, max staleness %d\n",
			*steps, res.AsyncSeconds, idealAsync, res.AsyncEfficiency, res.Speedup, maxSt)
	}

	// Orchestration overhead: zero-latency backends. The machine may be
	// shared, so the run is repeated and the fastest kept; the CPU time the
	// process used per sample is reported too.
	if want("overhead") {
		ovCfg := base
		ovCfg.Steps = *ovSteps
		ovCfg.MaxStaleness = *ovK
		ovCfg.Workers = *ovWorkers
		warm := ovCfg
		warm.Steps = 20
		_, _, err := run(ctx, warm, 0, 0, *tokens, true)
		check(err)
		samples := int64(*ovSteps) * int64(*groups) * int64(*groupSize)
		res.OverheadSamples = samples
		res.OverheadUSPerSample, res.OverheadCPUUSPerSample = math.Inf(1), math.Inf(1)
		for range *ovReps {
			ovRep, _, err := run(ctx, ovCfg, 0, 0, *tokens, true)
			check(err)
			cpu := lastRunCPU
			wall := float64(ovRep.Elapsed.Nanoseconds()) / 1e3 / float64(samples)
			res.OverheadUSPerSample = min(res.OverheadUSPerSample, wall)
			res.OverheadCPUUSPerSample = min(res.OverheadCPUUSPerSample, float64(cpu.Nanoseconds())/1e3/float64(samples))
			fmt.Printf("overhead: %d samples (%d groups/batch × %d, %d workers, k=%d) in %v: %.3f µs/sample wall, %.3f µs/sample CPU\n",
				samples, *groups, *groupSize, *ovWorkers, *ovK, ovRep.Elapsed.Round(time.Microsecond), wall, float64(cpu.Nanoseconds())/1e3/float64(samples))
		}
	}

	// Concurrency: hold many rollouts in flight at once.
	if *concurrent > 0 && want("concurrent") {
		cCfg := rl.Config{GroupsPerBatch: *concurrent, GroupSize: 1, Steps: 1, Workers: *concurrent, Watchdog: time.Hour}
		cRep, err := runConcurrent(ctx, cCfg, *concurrent, time.Minute)
		check(err)
		res.ConcurrentRollouts = cRep.PeakInFlight
		res.ConcurrentSeconds = cRep.Elapsed.Seconds()
		fmt.Printf("concurrency: %d rollouts in flight at once (target %d), run took %.2fs\n",
			cRep.PeakInFlight, *concurrent, res.ConcurrentSeconds)
	}

	// The sampler pool: utilisation with long-tailed latencies, and the
	// routing cost per call.
	if *poolSizes != "" && want("pool") {
		for _, f := range strings.Split(*poolSizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				check(fmt.Errorf("-pool: %q is not a positive replica count", f))
			}
			lv, err := runPool(ctx, n, n**poolCalls, *poolMedian, 1)
			check(err)
			res.Pool = append(res.Pool, lv)
			fmt.Printf("pool of %2d: %d calls in %.3fs, %.0f calls/s (ideal %.0f), utilisation %.3f (static round-robin on the same draws %.3f, ratio %.2f), routing %.0f ns/call\n",
				n, lv.Calls, lv.Seconds, lv.CallsPerSecond, lv.IdealPerSecond, lv.Utilisation, lv.StaticUtilisation, lv.VsStatic, lv.RoutingNS)
		}
	}

	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAverage = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if *asJSON {
		b, err := json.Marshal(res)
		check(err)
		fmt.Println(string(b))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
}

// run executes one loop on the simulated backend and returns its report and
// the largest staleness any step trained on.
// keepLedger gives the runs a per-prompt ledger (the -ledger flag).
var keepLedger bool

func run(ctx context.Context, cfg rl.Config, trainerT, samplerS time.Duration, tokens int, cheap bool) (loop.Report, int, error) {
	tr := sim.NewTrainer(sim.TrainerConfig{ForwardBackward: sim.Fixed(trainerT), NoOutputs: cheap})
	s := sim.NewSampler(sim.SamplerConfig{Latency: sim.Fixed(samplerS), Tokens: tokens, Static: cheap})
	n := (cfg.Steps + cfg.MaxStaleness + 2) * cfg.GroupsPerBatch
	items := make([]rollout.Problem, n)
	score := reward.Func(func(_ context.Context, s reward.Sample) (float64, error) { return float64(s.Tokens[0] & 1), nil })
	for i := range items {
		items[i] = &rollout.SingleTurn{ID: strconv.Itoa(i), Prompt: rl.Tokens([]int{i & 255, 1, 2}), Reward: score}
	}
	maxSt := 0
	deps := loop.Deps{Trainer: tr, Samplers: []rl.Sampler{s}, Dataset: rollout.NewSliceDataset(items, 0, 1),
		Observer: func(m loop.StepMetrics) { maxSt = max(maxSt, m.MaxStaleness) }}
	if keepLedger {
		deps.Ledger = &ledger.Ledger{}
	}
	l, err := loop.New(cfg, deps)
	if err != nil {
		return loop.Report{}, 0, err
	}
	cpu0 := cpuTime()
	err = l.Run(ctx)
	lastRunCPU = cpuTime() - cpu0
	return l.Report(), maxSt, err
}

// lastRunCPU is the CPU time the process used during the last run's
// Loop.Run (dataset construction excluded).
var lastRunCPU time.Duration

// barrier holds every Sample call until target calls are in flight at
// once (or, when giveUp > 0, until a call has waited that long), then lets
// them all finish: a direct test that the pipeline holds that many rollouts
// without error.
type barrier struct {
	rl.Sampler
	target  int64
	giveUp  time.Duration
	n       atomic.Int64
	peak    atomic.Int64
	release chan struct{}
	once    sync.Once
}

func (b *barrier) Sample(ctx context.Context, p rl.ModelInput, n int, sp rl.SamplingParams) (rl.SampleOutput, error) {
	cur := b.n.Add(1)
	defer b.n.Add(-1)
	for {
		old := b.peak.Load()
		if cur <= old || b.peak.CompareAndSwap(old, cur) {
			break
		}
	}
	if cur >= b.target {
		b.once.Do(func() { close(b.release) })
	}
	var expired <-chan time.Time // nil: wait for the target alone
	if b.giveUp > 0 {
		t := time.NewTimer(b.giveUp)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-b.release:
	case <-expired:
	case <-ctx.Done():
		return rl.SampleOutput{}, ctx.Err()
	}
	return b.Sampler.Sample(ctx, p, n, sp)
}

// runConcurrent runs one step whose target rollouts must all be in flight
// at once. giveUp > 0 lets a rollout proceed after waiting that long for the
// others (the command's safety net, so that a pipeline that cannot hold
// target rollouts reports a smaller peak instead of hanging); 0 waits for
// the target however long it takes.
func runConcurrent(ctx context.Context, cfg rl.Config, target int, giveUp time.Duration) (loop.Report, error) {
	tr := sim.NewTrainer(sim.TrainerConfig{NoOutputs: true})
	s := &barrier{Sampler: sim.NewSampler(sim.SamplerConfig{Tokens: 1, Static: true}), target: int64(target), giveUp: giveUp, release: make(chan struct{})}
	items := make([]rollout.Problem, target)
	score := reward.Func(func(context.Context, reward.Sample) (float64, error) { return 0, nil })
	for i := range items {
		items[i] = &rollout.SingleTurn{ID: "p", Prompt: rl.Tokens([]int{i & 255}), Reward: score}
	}
	l, err := loop.New(cfg, loop.Deps{Trainer: tr, Samplers: []rl.Sampler{s}, Dataset: rollout.NewSliceDataset(items, 0, 1)})
	if err != nil {
		return loop.Report{}, err
	}
	if err := l.Run(ctx); err != nil {
		return loop.Report{}, err
	}
	rep := l.Report()
	if rep.Failed > 0 {
		return rep, fmt.Errorf("%d rollouts failed", rep.Failed)
	}
	rep.PeakInFlight = min(rep.PeakInFlight, s.peak.Load())
	return rep, nil
}

// cpuTime returns the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
