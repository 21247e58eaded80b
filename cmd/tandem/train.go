package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tandemrl/tandem/progress"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/train"
)

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train", stderr)
	d := train.DefaultConfig()
	configPath := fs.String("config", "", "JSON job file (keys as in the run folder's config.json); flags override it")
	fs.String("name", d.Name, "run name (its folder is <dir>/<name>)")
	fs.String("dir", d.Dir, "folder the run folder is created in")
	fs.Int("steps", d.RL.Steps, "learner steps (optimizer steps per batch: see -substeps)")
	fs.Int("groups", d.RL.GroupsPerBatch, "groups (prompts) per step")
	fs.Int("group-size", d.RL.GroupSize, "samples per prompt")
	fs.Int("max-staleness", d.RL.MaxStaleness, "max staleness k in optimizer steps: 0 = synchronous RL, k ≥ 1 overlaps sampling and training")
	fs.String("stale-policy", string(d.RL.StalePolicy), "what happens to a group that would exceed k: pace | drop | requeue")
	fs.Int("workers", 0, "rollout goroutines (0 = groups × (k+1))")
	fs.Int("substeps", 1, "optimizer steps per batch")
	fs.Float64("lr", d.RL.Adam.LearningRate, "Adam learning rate")
	fs.Float64("temperature", d.RL.Sampling.Temperature, "sampling temperature (also used for held-out accuracy)")
	fs.Int("max-tokens", d.RL.Sampling.MaxTokens, "longest completion")
	fs.Int64("seed", d.RL.Seed, "seed of data order and sampling")
	fs.Int("save-every", d.RL.SaveEvery, "save the training state every this many steps (0 = only at the end)")
	fs.Int("trainer-threads", d.TrainerThreads, "cores the trainer uses")
	fs.Int("sampler-threads", d.SamplerThreads, "cores each sampler uses")
	fs.Int("samplers", d.Samplers, "sampler replicas")
	fs.Int("rank", d.Lora.Rank, "LoRA rank")
	fs.Int("eval-every", d.EvalEvery, "snapshot the policy every this many steps for held-out evaluation")
	fs.Int("eval-problems", d.EvalProblems, "held-out problems per evaluation")
	fs.Float64("target-accuracy", d.TargetAccuracy, "accuracy whose first crossing is reported as time_to_target_seconds")
	fs.Float64("format-weight", d.FormatWeight, "weight of the reward's format term")
	fs.String("objective", string(d.Algo.Objective), "RL objective: naive | ppo | tis | decoupled (empty = naive)")
	fs.Bool("normalize-std", d.Algo.NormalizeStd, "divide advantages by the group's standard deviation")
	fs.Bool("keep-uniform", d.Algo.KeepUniform, "keep groups whose rewards are all equal (default: filtered out, counted)")
	fs.Float64("kl-coef", d.Algo.KLCoef, "KL penalty against the base model (0 = off)")
	fs.String("plugin", "", "reward plugin command (space-separated), added as a reward term")
	fs.String("plugin-url", "", "reward plugin HTTP endpoint, added as a reward term")
	fs.Float64("plugin-weight", 1, "weight of the plugin's reward term")
	fs.String("base", "", "base weights file (default: the shipped model)")
	fs.String("model", "", "a Hugging Face model folder to train instead (the arithmetic task rendered as a chat by -renderer)")
	fs.String("renderer", "", "with -model: chat renderer (default: the folder's chat template, else role_colon)")
	fs.Int("samples-every", d.SamplesEvery, "write the trained rollouts of every this many steps to the run folder's samples.jsonl (0: none)")
	fs.String("weights", "", "with -model: stored (default: a BF16 or F16 checkpoint's matrices stay in their 16-bit format, memory-mapped) or float32")
	fs.String("activations", "", "with -model and its weights stored: float32 (default) or bfloat16 (activations rounded to bfloat16 in the products with a BF16 base, float32 sums: the fastest path on AVX512_BF16 CPUs without AMX, e.g. AMD Zen 4/5)")
	fs.String("sampler-url", "", "sample through OpenAI-compatible servers instead of in process: comma-separated URLs (tandem serve -role sampler, vLLM, SGLang; key $TANDEM_API_KEY), one replica each; they must read the run folder")
	fs.String("sampler-dialect", "", "with -sampler-url: vllm (default; tandem serve speaks it) or sglang")
	withUI := fs.Bool("ui", false, "serve the run dashboard (tandem ui) over -dir while the job runs, on -ui-listen")
	uiListen := fs.String("ui-listen", "127.0.0.1:8080", "with -ui: loopback host:port of the dashboard (port 0 picks a free one)")
	otel := fs.String("otel", os.Getenv("TANDEM_OTEL"), otelHelp)
	quiet := fs.Bool("quiet", false, "print only the summary")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg := d
	if *configPath != "" {
		c, err := train.ReadConfig(*configPath)
		if err != nil {
			return err
		}
		cfg = c
	}
	fs.Visit(func(f *flag.Flag) { applyFlag(&cfg, f) })
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}

	if *withUI {
		if err := checkListen("train -ui", *uiListen, false); err != nil {
			return err
		}
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return fmt.Errorf("train: -ui: %w", err)
		}
		url, _, stop, err := startUI(cfg.Dir, *uiListen, "")
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		defer func() { _ = stop() }()
		fmt.Fprintf(stderr, "dashboard: %s (runs in %s; the run appears once it starts)\n", url, cfg.Dir)
	}
	disp := progress.New(stderr)
	hooks := train.Hooks{Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if !*quiet {
		hooks.Progress = disp.Update
		hooks.Log = disp.Println
		disp.Println(fmt.Sprintf("training %s: %d steps of %d groups × %d, max staleness %d (%s), %s objective, trainer %d core(s), %d sampler(s) × %d core(s)",
			cfg.Name, cfg.RL.Steps, cfg.RL.GroupsPerBatch, cfg.RL.GroupSize, cfg.RL.MaxStaleness, cfg.RL.StalePolicy, cfg.Algo.WithDefaults().Objective,
			cfg.TrainerThreads, cfg.Samplers, cfg.SamplerThreads))
	}
	shutdown, err := setupOTel(ctx, *otel, cfg)
	if err != nil {
		return err
	}
	sum, err := train.Run(ctx, cfg, hooks)
	disp.Done()
	if serr := shutdown(context.WithoutCancel(ctx)); serr != nil && !*quiet {
		disp.Println("otel: " + serr.Error())
	}
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stderr, "run folder: %s (config.json, metrics.jsonl, summary.json, plots/, checkpoints/)\n", sum.Dir)
		fmt.Fprintf(stderr, "sample from it: tandem sample --checkpoint %s --prompt \"What is 12 + 35?\"\n", sum.Checkpoint)
	}
	b, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(b))
	return nil
}

// applyFlag sets the config field a command-line flag names.
func applyFlag(c *train.Config, f *flag.Flag) {
	g := f.Value.(flag.Getter).Get()
	switch f.Name {
	case "name":
		c.Name = g.(string)
	case "dir":
		c.Dir = g.(string)
	case "steps":
		c.RL.Steps = g.(int)
	case "groups":
		c.RL.GroupsPerBatch = g.(int)
	case "group-size":
		c.RL.GroupSize = g.(int)
	case "max-staleness":
		c.RL.MaxStaleness = g.(int)
	case "stale-policy":
		c.RL.StalePolicy = rl.StalePolicy(g.(string))
	case "workers":
		c.RL.Workers = g.(int)
	case "substeps":
		c.RL.Substeps = g.(int)
	case "lr":
		c.RL.Adam.LearningRate = g.(float64)
	case "temperature":
		c.RL.Sampling.Temperature = g.(float64)
	case "max-tokens":
		c.RL.Sampling.MaxTokens = g.(int)
	case "seed":
		c.RL.Seed = g.(int64)
	case "save-every":
		c.RL.SaveEvery = g.(int)
	case "trainer-threads":
		c.TrainerThreads = g.(int)
	case "sampler-threads":
		c.SamplerThreads = g.(int)
	case "samplers":
		c.Samplers = g.(int)
	case "rank":
		c.Lora.Rank = g.(int)
	case "eval-every":
		c.EvalEvery = g.(int)
	case "eval-problems":
		c.EvalProblems = g.(int)
	case "target-accuracy":
		c.TargetAccuracy = g.(float64)
	case "format-weight":
		c.FormatWeight = g.(float64)
	case "objective":
		c.Algo.Objective = algo.Objective(g.(string))
	case "normalize-std":
		c.Algo.NormalizeStd = g.(bool)
	case "keep-uniform":
		c.Algo.KeepUniform = g.(bool)
	case "kl-coef":
		c.Algo.KLCoef = g.(float64)
	case "plugin":
		c.RewardPlugin = pluginOf(c.RewardPlugin)
		c.RewardPlugin.Command = strings.Fields(g.(string))
	case "plugin-url":
		c.RewardPlugin = pluginOf(c.RewardPlugin)
		c.RewardPlugin.URL = g.(string)
	case "plugin-weight":
		c.RewardPlugin = pluginOf(c.RewardPlugin)
		c.RewardPlugin.Weight = g.(float64)
	case "base":
		c.BaseModel = g.(string)
	case "model":
		c.Model = g.(string)
	case "renderer":
		c.Renderer = g.(string)
	case "weights":
		c.Weights = g.(string)
	case "activations":
		c.Activations = g.(string)
	case "samples-every":
		c.SamplesEvery = g.(int)
	case "sampler-url":
		c.SamplerURLs = nil
		for _, u := range strings.Split(g.(string), ",") {
			if u = strings.TrimSpace(u); u != "" {
				c.SamplerURLs = append(c.SamplerURLs, u)
			}
		}
	case "sampler-dialect":
		c.SamplerDialect = g.(string)
	}
}

func pluginOf(p *train.PluginConfig) *train.PluginConfig {
	if p == nil {
		return &train.PluginConfig{Weight: 1, Timeout: 10 * time.Second}
	}
	return p
}
