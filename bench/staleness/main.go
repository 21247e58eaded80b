// Command staleness measures what asynchrony buys and what it costs, side
// by side:
//
//   - the learning sweep runs the arithmetic GRPO job on the embedded engine
//     for every max staleness k ∈ {0, 1, 2, 4, 8} and every objective (naive
//     importance sampling, PPO clipped against the behaviour policy,
//     truncated importance sampling, AReaL's decoupled PPO), with the same
//     step budget and seeds, and reports held-out accuracy, wall time, time
//     to a target accuracy, samples/s, the staleness actually trained on,
//     dropped/requeued groups and the sampler/trainer log-prob gap;
//   - the throughput sweep runs the loop on the simulated backend
//     (log-normal generation times, a fixed trainer time per step, several
//     sampler replicas with a bounded number of slots each) for every stale
//     policy (drop, requeue, pace) and k, and reports steps/s, wasted
//     samples, the learner's idle fraction, and the asynchronous speed-up
//     against the simulated ideal (T+S per synchronous step, max(T,S) per
//     asynchronous one).
//
// Usage:
//
//	go run ./bench/staleness [-quick] [-json] [-out DIR] [-only learning|throughput]
//
// It writes learning.{md,json}, throughput.{md,json} and the plots
// accuracy_vs_k.{svg,png} and throughput_vs_k.{svg,png} under -out
// (default bench/out/staleness). Human-readable lines go to stdout first;
// with -json the last line is one JSON object holding both tables.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
)

// Result is the JSON object of the last line (and results.json).
type Result struct {
	Mode       string           `json:"mode"`
	Learning   *LearningTable   `json:"learning,omitempty"`
	Throughput *ThroughputTable `json:"throughput,omitempty"`
	Seconds    float64          `json:"seconds"`
	GOMAXPROCS int              `json:"gomaxprocs"`
	// LoadAverage is /proc/loadavg at the start and at the end: the
	// machine may be shared, which distorts wall times.
	LoadAverageStart string   `json:"load_average_start"`
	LoadAverageEnd   string   `json:"load_average_end"`
	Files            []string `json:"files"`
}

// Options select what runs and where it goes.
type Options struct {
	Mode       string
	Out        string
	Only       string
	KeepRuns   bool
	Learning   LearningSettings
	Throughput ThroughputSettings
}

// quickLearning fits the learning sweep in about six minutes on two quiet
// cores: 20 cells × 2 seeds, about 9 s per run (24 steps of ~0.25 s, four
// evaluations of 100 held-out problems).
func quickLearning() LearningSettings {
	return LearningSettings{
		Ks: []int{0, 1, 2, 4, 8}, Objectives: algo.Objectives(), Seeds: []int64{1, 2},
		Steps: 24, GroupsPerBatch: 8, GroupSize: 8, Substeps: 2, StalePolicy: rl.Pace,
		EvalProblems: 100, EvalEvery: 8, TargetAccuracy: 0.5, LearningRate: 2e-3,
		TrainerThreads: 1, SamplerThreads: 1,
	}
}

// fullLearning is near the main job's size with three seeds: 60 runs of
// 60 steps × 16 groups, about an hour on 2 quiet cores.
func fullLearning() LearningSettings {
	s := quickLearning()
	s.Seeds = []int64{1, 2, 3}
	s.Steps, s.GroupsPerBatch = 60, 16
	s.EvalProblems, s.EvalEvery, s.TargetAccuracy = 300, 10, 0.8
	return s
}

func quickThroughput() ThroughputSettings {
	return ThroughputSettings{
		Ks: []int{0, 1, 2, 4, 8}, Policies: []rl.StalePolicy{rl.Drop, rl.Requeue, rl.Pace},
		Steps: 20, GroupsPerBatch: 32, GroupSize: 8,
		TrainerTime: 150 * time.Millisecond, GenMedian: 25 * time.Millisecond, GenSigma: 0.6,
		Replicas: 4, Slots: 4, Seed: 1, Tolerance: 0.05,
	}
}

func fullThroughput() ThroughputSettings {
	s := quickThroughput()
	s.Steps = 60
	return s
}

func main() {
	var (
		quick    = flag.Bool("quick", false, "small settings: both sweeps in well under 15 minutes on 2 cores")
		asJSON   = flag.Bool("json", false, "print one JSON object holding both tables on the last line")
		out      = flag.String("out", "bench/out/staleness", "folder for the tables, JSON files and plots")
		only     = flag.String("only", "", "run only this sweep: learning or throughput")
		seeds    = flag.Int("seeds", 0, "seeds per learning cell (0 = the mode's: 2 quick, 3 full)")
		steps    = flag.Int("steps", 0, "learner steps per learning run (0 = the mode's)")
		keepRuns = flag.Bool("keep-runs", false, "keep the learning runs' folders (metrics, checkpoints) under -out/runs-*")
		ks       = flag.String("ks", "", "comma-separated max staleness values of both sweeps (default 0,1,2,4,8)")
		objs     = flag.String("objectives", "", "comma-separated objectives of the learning sweep (default naive,ppo,tis,decoupled)")
		substeps = flag.Int("substeps", 0, "optimizer steps per learner step in the learning sweep (0 = the mode's: 2)")
		behavCap = flag.Float64("behaviour-cap", 0, "decoupled PPO's filter on the behaviour weight π_prox/μ (0 = the default 5, negative = no filter)")
		replotIn = flag.String("replot", "", "run nothing: redraw the tables and plots of the learning.json and throughput.json in this folder into -out")
	)
	flag.Parse()
	if *replotIn != "" {
		paths, err := replot(*replotIn, *out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "staleness:", err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(paths, "\n"))
		return
	}
	opts := Options{Mode: "full", Out: *out, Only: *only, KeepRuns: *keepRuns,
		Learning: fullLearning(), Throughput: fullThroughput()}
	if *quick {
		opts.Mode, opts.Learning, opts.Throughput = "quick", quickLearning(), quickThroughput()
	}
	if *seeds > 0 {
		opts.Learning.Seeds = opts.Learning.Seeds[:0]
		for i := range *seeds {
			opts.Learning.Seeds = append(opts.Learning.Seeds, int64(i+1))
		}
	}
	if *steps > 0 {
		opts.Learning.Steps = *steps
	}
	if err := (algo.Config{BehaviourCap: *behavCap}).Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "staleness: -behaviour-cap: %v\n", err)
		os.Exit(2)
	}
	opts.Learning.BehaviourCap = *behavCap
	if *substeps > 0 {
		opts.Learning.Substeps = *substeps
	}
	if err := parseLists(&opts, *ks, *objs); err != nil {
		fmt.Fprintln(os.Stderr, "staleness:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := run(ctx, opts, runTrain, func(line string) { fmt.Println(line) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "staleness:", err)
		os.Exit(1)
	}
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			fmt.Fprintln(os.Stderr, "staleness:", err)
			os.Exit(1)
		}
		fmt.Println(string(b))
	}
}

// run runs the selected sweeps, writes their tables, JSON files and plots
// under opts.Out, and returns the combined result.
func run(ctx context.Context, opts Options, trainer trainFunc, say func(string)) (Result, error) {
	began := time.Now()
	res := Result{Mode: opts.Mode, GOMAXPROCS: runtime.GOMAXPROCS(0), LoadAverageStart: loadAverage()}
	switch opts.Only {
	case "", "learning", "throughput":
	default:
		return res, fmt.Errorf("-only %q unknown; allowed: learning, throughput (or empty for both)", opts.Only)
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return res, err
	}
	keep := func(paths ...string) { res.Files = append(res.Files, paths...) }

	// The throughput sweep first: it measures wall-clock sleeps and should
	// not share the cores with the learning runs.
	if opts.Only != "learning" {
		tab, err := runThroughput(ctx, opts.Throughput, say)
		if err != nil {
			return res, err
		}
		res.Throughput = &tab
		md := tab.Markdown()
		say(md)
		paths, err := writeSweep(opts.Out, "throughput", md, tab)
		keep(paths...)
		if err != nil {
			return res, err
		}
		p, err := throughputPlot(tab)
		if err != nil {
			return res, fmt.Errorf("throughput plot: %w", err)
		}
		paths, err = savePlot(p, opts.Out, "throughput_vs_k")
		keep(paths...)
		if err != nil {
			return res, err
		}
	}
	if opts.Only != "throughput" {
		dir, err := os.MkdirTemp(opts.Out, "runs-")
		if err != nil {
			return res, err
		}
		tab, err := runLearning(ctx, opts.Learning, dir, trainer, say)
		if !opts.KeepRuns {
			err = errors.Join(err, os.RemoveAll(dir))
		}
		if err != nil {
			return res, err
		}
		res.Learning = &tab
		md := tab.Markdown()
		say(md)
		paths, err := writeSweep(opts.Out, "learning", md, tab)
		keep(paths...)
		if err != nil {
			return res, err
		}
		p, err := accuracyPlot(tab)
		if err != nil {
			return res, fmt.Errorf("accuracy plot: %w", err)
		}
		paths, err = savePlot(p, opts.Out, "accuracy_vs_k")
		keep(paths...)
		if err != nil {
			return res, err
		}
	}
	res.Seconds = time.Since(began).Seconds()
	res.LoadAverageEnd = loadAverage()
	say(fmt.Sprintf("done in %.1fs (load average %s at the start, %s at the end, GOMAXPROCS %d)",
		res.Seconds, res.LoadAverageStart, res.LoadAverageEnd, res.GOMAXPROCS))
	return res, nil
}

// replot reads the sweeps' JSON files from in (either may be missing, not
// both) and writes their Markdown tables and plots under out.
func replot(in, out string) ([]string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var written []string
	found := false
	var lt LearningTable
	if ok, err := readJSON(filepath.Join(in, "learning.json"), &lt); err != nil {
		return nil, err
	} else if ok {
		found = true
		p, err := accuracyPlot(lt)
		if err != nil {
			return nil, err
		}
		paths, err := savePlot(p, out, "accuracy_vs_k")
		written = append(written, paths...)
		if err != nil {
			return written, err
		}
		path, err := writeText(out, "learning.md", lt.Markdown())
		written = append(written, path)
		if err != nil {
			return written, err
		}
	}
	var tt ThroughputTable
	if ok, err := readJSON(filepath.Join(in, "throughput.json"), &tt); err != nil {
		return written, err
	} else if ok {
		found = true
		p, err := throughputPlot(tt)
		if err != nil {
			return written, err
		}
		paths, err := savePlot(p, out, "throughput_vs_k")
		written = append(written, paths...)
		if err != nil {
			return written, err
		}
		path, err := writeText(out, "throughput.md", tt.Markdown())
		written = append(written, path)
		if err != nil {
			return written, err
		}
	}
	if !found {
		return nil, fmt.Errorf("-replot %s: neither learning.json nor throughput.json is there", in)
	}
	return written, nil
}

// readJSON decodes path into v; a missing file is (false, nil).
func readJSON(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// parseLists applies the -ks and -objectives flags (empty keeps the
// defaults).
func parseLists(opts *Options, ks, objs string) error {
	if ks != "" {
		var vals []int
		for _, f := range strings.Split(ks, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || k < 0 {
				return fmt.Errorf("-ks %q: %q is not a staleness; want integers ≥ 0 such as 0,1,2,4,8", ks, f)
			}
			vals = append(vals, k)
		}
		opts.Learning.Ks, opts.Throughput.Ks = vals, vals
	}
	if objs != "" {
		var vals []algo.Objective
		for _, f := range strings.Split(objs, ",") {
			o, err := algo.ParseObjective(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-objectives: %w", err)
			}
			vals = append(vals, o)
		}
		opts.Learning.Objectives = vals
	}
	return nil
}

// writeSweep writes name.md and name.json under dir.
func writeSweep(dir, name, md string, v any) ([]string, error) {
	p1, err := writeText(dir, name+".md", md)
	if err != nil {
		return nil, err
	}
	p2, err := writeJSON(dir, name+".json", v)
	if err != nil {
		return []string{p1}, err
	}
	return []string{p1, p2}, nil
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
