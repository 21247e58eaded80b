package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// Config is a job. Zero fields mean the defaults of DefaultConfig, so a
// config file need only say what differs.
type Config struct {
	// Name names the run (its folder and checkpoint references).
	Name string `json:"name"`
	// Task is the environment: "arithmetic" (GRPO on "What is x + y?").
	Task string `json:"task"`
	// RL is the pipeline configuration (batch shape, staleness, substeps,
	// optimizer, sampling); the algorithm's settings are in Algo.
	RL rl.Config `json:"rl"`
	// Lora selects the adapters.
	Lora engine.LoraConfig `json:"lora"`
	// Algo configures GRPO: the objective (naive, ppo, tis, decoupled),
	// which chooses the trainer's loss and the off-policy correction,
	// advantage normalization, dynamic sampling and the KL penalty.
	Algo algo.Config `json:"algo"`
	// FormatWeight is the weight of the format term of the reward (the
	// correctness term weighs 1).
	FormatWeight float64 `json:"format_weight"`
	// RewardPlugin, if set, adds an out-of-process reward term.
	RewardPlugin *PluginConfig `json:"reward_plugin,omitempty"`
	// TrainerThreads and SamplerThreads bound the cores the trainer and each
	// sampler use (1 each emulates two machines on two cores).
	TrainerThreads int `json:"trainer_threads"`
	SamplerThreads int `json:"sampler_threads"`
	// Samplers is the number of in-process sampler replicas.
	Samplers int `json:"samplers"`
	// BaseModel is a base weights file; empty means the shipped one.
	BaseModel string `json:"base_model,omitempty"`
	// Model is a Hugging Face model folder (config.json, safetensors,
	// tokenizer.json) to train instead; the task's prompts are then user
	// turns rendered by Renderer (default: the folder's chat template, else
	// role_colon), replies parsed back by it, and sampling stops at its stop
	// tokens and the model's EOS ids.
	Model    string `json:"model,omitempty"`
	Renderer string `json:"renderer,omitempty"`
	// Weights is how Model's weight matrices are held: "stored" (the
	// default, ""): a checkpoint stored in BF16 keeps them in bfloat16, one
	// stored in F16 in IEEE half precision, memory-mapped (half the memory
	// of float32; products computed from them directly, an F16 base's
	// exactly as float32 would), others load in float32; "float32": always
	// widened.
	Weights string `json:"weights,omitempty"`
	// Activations is the precision of the activations entering products
	// with the base's matrices: "float32" (the default, ""), or "bfloat16"
	// for a base kept in bfloat16 (a BF16 checkpoint with weights stored):
	// each activation rounded to one bfloat16, products summed in float32,
	// as mixed-precision training does (engine.Matrices16.RoundActivations).
	// It is the fastest path where the CPU has AVX512_BF16 but no AMX
	// (AMD's Zen 4 and Zen 5); with AMX, or without AVX512_BF16, nothing is
	// rounded and the products are the exact ones. It moves log-probs by a
	// few 1e-3; trainer and in-process samplers share it, and theirs differ
	// by about 1e-3 a token (float32: 1e-6), since a last-bit difference
	// between their float32 activations can round to different bfloat16s.
	Activations string `json:"activations,omitempty"`
	// SamplerURLs, when set, sample through OpenAI-compatible servers
	// (tandem serve's /v1 surface, vLLM, SGLang; package backend/openai),
	// one replica per URL, instead of in-process samplers. The trainer
	// stays in process and publishes every version as a PEFT checkpoint in
	// the run folder, which the servers must read (the same machine or a
	// shared file system). The servers' API key is $TANDEM_API_KEY.
	SamplerURLs []string `json:"sampler_urls,omitempty"`
	// SamplerDialect is "vllm" (default; tandem serve speaks it) or "sglang".
	SamplerDialect string `json:"sampler_dialect,omitempty"`
	// EvalEvery snapshots the policy every this many steps for held-out
	// evaluation after the run (0 = only the base and the final policy).
	EvalEvery int `json:"eval_every"`
	// SamplesEvery writes the rollouts of every this many steps to the run
	// folder's samples.jsonl (prompt and completion as text, reward,
	// version, staleness; the dashboard's samples page); 0 writes none.
	SamplesEvery int `json:"samples_every"`
	// EvalProblems is how many held-out problems each evaluation uses.
	EvalProblems int `json:"eval_problems"`
	// TargetAccuracy is the held-out accuracy whose first crossing is
	// reported as time_to_target_seconds.
	TargetAccuracy float64 `json:"target_accuracy"`
	// Dir is the folder runs are written under (the run's folder is
	// Dir/Name).
	Dir string `json:"dir"`
}

// PluginConfig adds a reward plugin term: a subprocess (Command) or an HTTP
// endpoint (URL).
type PluginConfig struct {
	Command []string      `json:"command,omitempty"`
	URL     string        `json:"url,omitempty"`
	Weight  float64       `json:"weight"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// DefaultConfig is the main job: asynchronous GRPO on arithmetic that
// learns on a 2-core laptop in a few minutes.
func DefaultConfig() Config {
	return Config{
		Name: "arith-grpo",
		Task: "arithmetic",
		RL: rl.Config{
			GroupsPerBatch: 16,
			GroupSize:      8,
			MaxStaleness:   2,
			StalePolicy:    rl.Pace,
			Steps:          80,
			Adam:           rl.AdamParams{LearningRate: 2e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, GradClipNorm: 1},
			Sampling:       rl.SamplingParams{MaxTokens: 24, Temperature: 1, StopTokens: []int{engine.Newline, engine.EOS}},
			Seed:           1,
			SaveEvery:      10,
		},
		Lora:           engine.DefaultLoraConfig(),
		Algo:           algo.Config{Objective: algo.PPO},
		FormatWeight:   arithmetic.FormatWeight,
		TrainerThreads: 1,
		SamplerThreads: 1,
		Samplers:       1,
		EvalEvery:      5,
		SamplesEvery:   1,
		EvalProblems:   500,
		TargetAccuracy: 0.8,
		Dir:            "runs",
	}
}

// withDefaults fills c's zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Name == "" {
		c.Name = d.Name
	}
	if c.Task == "" {
		c.Task = d.Task
	}
	if c.RL.GroupsPerBatch == 0 {
		c.RL.GroupsPerBatch = d.RL.GroupsPerBatch
	}
	if c.RL.GroupSize == 0 {
		c.RL.GroupSize = d.RL.GroupSize
	}
	if c.RL.StalePolicy == "" {
		c.RL.StalePolicy = d.RL.StalePolicy
	}
	if c.RL.Steps == 0 {
		c.RL.Steps = d.RL.Steps
	}
	if c.RL.Adam == (rl.AdamParams{}) {
		c.RL.Adam = d.RL.Adam
	}
	if c.RL.Sampling.MaxTokens == 0 {
		c.RL.Sampling = d.RL.Sampling
	}
	if c.Lora == (engine.LoraConfig{}) {
		c.Lora = d.Lora
	}
	if c.TrainerThreads == 0 {
		c.TrainerThreads = d.TrainerThreads
	}
	if c.SamplerThreads == 0 {
		c.SamplerThreads = d.SamplerThreads
	}
	if c.Samplers == 0 {
		c.Samplers = d.Samplers
	}
	if c.EvalProblems == 0 {
		c.EvalProblems = d.EvalProblems
	}
	if c.TargetAccuracy == 0 {
		c.TargetAccuracy = d.TargetAccuracy
	}
	if c.Dir == "" {
		c.Dir = d.Dir
	}
	return c
}

// Validate checks the job, naming the field and the allowed values.
func (c Config) Validate() error {
	if err := c.RL.Validate(); err != nil {
		return fmt.Errorf("rl: %w", err)
	}
	if err := c.Lora.Validate(); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	if err := c.Algo.Validate(); err != nil {
		return fmt.Errorf("algo: %w", err)
	}
	switch {
	case c.Task != "arithmetic":
		return fmt.Errorf("task %q unknown; allowed: arithmetic", c.Task)
	case c.RL.Steps < 1:
		return fmt.Errorf("rl.steps %d must be at least 1 for a training job", c.RL.Steps)
	case c.TrainerThreads < 1 || c.SamplerThreads < 1:
		return fmt.Errorf("trainer_threads %d and sampler_threads %d must be at least 1", c.TrainerThreads, c.SamplerThreads)
	case c.Samplers < 1 || c.Samplers > 64:
		return fmt.Errorf("samplers %d must be in [1, 64]", c.Samplers)
	case c.EvalEvery < 0:
		return fmt.Errorf("eval_every %d must be ≥ 0 (0 = base and final only)", c.EvalEvery)
	case c.SamplesEvery < 0:
		return fmt.Errorf("samples_every %d must be ≥ 0 (0 = no samples.jsonl)", c.SamplesEvery)
	case c.EvalProblems < 1:
		return fmt.Errorf("eval_problems %d must be at least 1", c.EvalProblems)
	case c.TargetAccuracy < 0 || c.TargetAccuracy > 1:
		return fmt.Errorf("target_accuracy %v must be in [0, 1]", c.TargetAccuracy)
	case c.FormatWeight < 0:
		return fmt.Errorf("format_weight %v must be ≥ 0", c.FormatWeight)
	case c.Model != "" && c.BaseModel != "":
		return fmt.Errorf("model %q and base_model %q both name the base; set one", c.Model, c.BaseModel)
	case c.SamplerDialect != "" && c.SamplerDialect != "vllm" && c.SamplerDialect != "sglang":
		return fmt.Errorf("sampler_dialect %q unknown; allowed: vllm, sglang", c.SamplerDialect)
	case c.SamplerDialect != "" && len(c.SamplerURLs) == 0:
		return fmt.Errorf("sampler_dialect %q needs sampler_urls", c.SamplerDialect)
	case c.Renderer != "" && c.Model == "":
		return fmt.Errorf("renderer %q needs model (a Hugging Face folder); the shipped model is not a chat model", c.Renderer)
	case c.Weights != "" && c.Weights != WeightsStored && c.Weights != WeightsFloat32:
		return fmt.Errorf("weights %q unknown; allowed: %s (default), %s", c.Weights, WeightsStored, WeightsFloat32)
	case c.Weights != "" && c.Model == "":
		return fmt.Errorf("weights %q needs model (a Hugging Face folder)", c.Weights)
	case c.Activations != "" && c.Activations != ActivationsFloat32 && c.Activations != ActivationsBFloat16:
		return fmt.Errorf("activations %q unknown; allowed: %s (default), %s", c.Activations, ActivationsFloat32, ActivationsBFloat16)
	case c.Activations == ActivationsBFloat16 && c.Model == "":
		return fmt.Errorf("activations %q needs model (a Hugging Face folder with BF16 weights)", c.Activations)
	case c.Activations == ActivationsBFloat16 && c.Weights == WeightsFloat32:
		return fmt.Errorf("activations %q needs the weights stored, not %q", c.Activations, WeightsFloat32)
	}
	if p := c.RewardPlugin; p != nil {
		if (len(p.Command) == 0) == (p.URL == "") {
			return errors.New("reward_plugin: set exactly one of command and url")
		}
	}
	return nil
}

// The values of Config.Weights.
const (
	WeightsStored  = "stored"
	WeightsFloat32 = "float32"
)

// The values of Config.Activations.
const (
	ActivationsFloat32  = "float32"
	ActivationsBFloat16 = "bfloat16"
)

// ReadConfig reads a JSON job file over DefaultConfig. Unknown keys and
// wrong types are errors naming the key and the line; a key that moved (the
// rl object's old "loss", "correction" and "kl_coef") is an error naming
// where it moved.
func ReadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a JSON job over DefaultConfig and validates it. Keys
// present in the JSON override the defaults, zeros included.
func ParseConfig(b []byte) (Config, error) {
	c := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, describeJSONError(b, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, errors.New("config: extra data after the JSON object")
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

func describeJSONError(b []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line := 1 + bytes.Count(b[:min(int(syn.Offset), len(b))], []byte("\n"))
		return fmt.Errorf("config line %d: %v", line, syn)
	case errors.As(err, &typ):
		off := typ.Offset
		if typ.Field == "rl" || strings.HasPrefix(typ.Field, "rl.") {
			// rl.Config decodes itself: its offsets count from its object.
			off += valueOffset(b, "rl")
		}
		line := 1 + bytes.Count(b[:min(max(int(off), 0), len(b))], []byte("\n"))
		return fmt.Errorf("config line %d: field %q: got a JSON %s, want %s", line, typ.Field, typ.Value, typ.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("config: unknown key %s (check its spelling; see `tandem train -h` for the keys)", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return fmt.Errorf("config: %w", err)
}

// valueOffset returns the byte offset in the JSON object b of the value of
// its top-level key, or 0 when b has no such key.
func valueOffset(b []byte, key string) int64 {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return 0
		}
		if k == key {
			// The value starts after the colon and any space.
			off := dec.InputOffset()
			for off < int64(len(b)) && strings.ContainsRune(" \t\r\n:", rune(b[off])) {
				off++
			}
			return off
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return 0
		}
	}
	return 0
}
