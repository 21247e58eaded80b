package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/tandemrl/tandem/internal/atomicfile"

	"github.com/tandemrl/tandem/engine/safetensors"
)

// Files of an adapter folder in PEFT layout.
const (
	AdapterConfigFile  = "adapter_config.json"
	AdapterWeightsFile = "adapter_model.safetensors"
)

// peftConfig is the subset of PEFT's LoraConfig the engine writes and reads.
type peftConfig struct {
	PeftType      string   `json:"peft_type"`
	TaskType      string   `json:"task_type"`
	BaseModel     string   `json:"base_model_name_or_path"`
	R             int      `json:"r"`
	LoraAlpha     float64  `json:"lora_alpha"`
	LoraDropout   float64  `json:"lora_dropout"`
	TargetModules []string `json:"target_modules"`
	Bias          string   `json:"bias"`
	FanInFanOut   bool     `json:"fan_in_fan_out"`
	UseRSLora     bool     `json:"use_rslora"`
	UseDora       bool     `json:"use_dora"`
	ModulesToSave []string `json:"modules_to_save"` // always written as null (vLLM requires it)
	InferenceMode bool     `json:"inference_mode"`
}

// SaveAdapter writes a as a PEFT adapter folder: adapter_config.json and
// adapter_model.safetensors (float32, names such as
// base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight, A
// [r, in] and B [out, r] in the model's grouped-query shapes: k and v have
// out = KVDim, o has in = QDim). baseModel is written as
// base_model_name_or_path (a Hub id such as "Qwen/Qwen3-0.6B"; may be
// empty); the config says "modules_to_save": null and "use_dora": false, as
// vLLM requires. Each file is written atomically; the folder is created if
// needed.
//
// Inference servers differ in what they accept: vLLM loads attention and
// MLP adapters but rejects any lm_head adapter, so train with TrainUnembed
// off for such exports. On a model with tied embeddings (Config.TiedEmbed)
// an lm_head adapter is written like any other: as in PEFT, it adapts the
// output head only, unmerged, and the input embedding stays as it is (the
// SDK's create_lora_training_client trains it by default, so tandem's own
// sampler checkpoints carry it). [Merge] refuses it, since folding it into
// the shared weight would change the embedding too.
func SaveAdapter[T Float](dir string, a *Adapter[T], baseModel string) error {
	return saveAdapter(dir, a, baseModel)
}

// saveAdapter is SaveAdapter without the export checks (SaveState's form).
func saveAdapter[T Float](dir string, a *Adapter[T], baseModel string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pc := peftConfig{
		PeftType: "LORA", TaskType: "CAUSAL_LM", BaseModel: baseModel,
		R: a.Lora.Rank, LoraAlpha: a.Lora.alpha(), TargetModules: a.Lora.targetModules(),
		Bias: "none", InferenceMode: true,
	}
	cj, err := json.MarshalIndent(pc, "", "  ")
	if err != nil {
		return err
	}
	mj, _ := json.Marshal(a.Model)
	lj, _ := json.Marshal(a.Lora)
	var ts []safetensors.Named
	for _, t := range a.tensors() {
		n, err := encodeT(t.Name, t.Shape, t.Data, safetensors.F32)
		if err != nil {
			return err
		}
		ts = append(ts, n)
	}
	meta := map[string]string{"format": "pt", metaConfig: string(mj), metaLora: string(lj)}
	if err := safetensors.WriteFile(filepath.Join(dir, AdapterWeightsFile), ts, meta); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, AdapterConfigFile), append(cj, '\n'))
}

// LoadAdapter reads a PEFT adapter folder for a model of shape cfg. It
// accepts LoRA adapters whose target modules are whole groups the engine
// supports (q,k,v,o_proj; gate,up,down_proj; lm_head) and checks every
// tensor's name, shape and values.
func LoadAdapter[T Float](dir string, cfg Config) (*Adapter[T], error) {
	lora, err := ReadLoraConfig(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, AdapterWeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if raw, ok := f.Metadata[metaLora]; ok {
		var saved LoraConfig
		if json.Unmarshal([]byte(raw), &saved) == nil {
			lora.Seed = saved.Seed
		}
	}
	a := newZeroAdapter[T](cfg, lora)
	var want []expected[T]
	for _, t := range a.tensors() {
		want = append(want, expected[T]{t.Name, t.Shape, t.Data})
	}
	if err := readTensors(f, want, path); err != nil {
		return nil, err
	}
	return a, nil
}

// ReadLoraConfig reads the LoRA settings (rank, alpha, trained parts) of a
// PEFT adapter folder — an adapter or a training state SaveState wrote —
// without its tensors. The seed is not part of a PEFT config; it is 0.
func ReadLoraConfig(dir string) (LoraConfig, error) {
	cj, err := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
	if err != nil {
		return LoraConfig{}, err
	}
	var pc peftConfig
	if err := json.Unmarshal(cj, &pc); err != nil {
		return LoraConfig{}, fmt.Errorf("%w: %s: %v", ErrShape, AdapterConfigFile, err)
	}
	lora, err := pc.lora()
	if err != nil {
		return LoraConfig{}, fmt.Errorf("%s: %w", filepath.Join(dir, AdapterConfigFile), err)
	}
	return lora, nil
}

func (pc peftConfig) lora() (LoraConfig, error) {
	bad := func(format string, a ...any) (LoraConfig, error) {
		return LoraConfig{}, fmt.Errorf("%w: %s", ErrShape, fmt.Sprintf(format, a...))
	}
	switch {
	case pc.PeftType != "LORA":
		return bad("peft_type %q; want \"LORA\"", pc.PeftType)
	case pc.UseRSLora:
		return bad("use_rslora is not supported (scale would be alpha/√r)")
	case pc.FanInFanOut:
		return bad("fan_in_fan_out is not supported")
	case pc.Bias != "" && pc.Bias != "none":
		return bad("bias %q is not supported; want \"none\"", pc.Bias)
	case pc.UseDora:
		return bad("use_dora is not supported (DoRA rescales the adapted weight)")
	case len(pc.ModulesToSave) > 0:
		return bad("modules_to_save %v is not supported; the engine loads LoRA pairs only", pc.ModulesToSave)
	}
	l := LoraConfig{Rank: pc.R, Alpha: pc.LoraAlpha}
	has := func(m string) bool { return slices.Contains(pc.TargetModules, m) }
	group := func(name string, ms ...string) (bool, error) {
		n := 0
		for _, m := range ms {
			if has(m) {
				n++
			}
		}
		if n != 0 && n != len(ms) {
			return false, fmt.Errorf("%w: target_modules %v adapts part of the %s group; the engine adapts all of %v or none", ErrShape, pc.TargetModules, name, ms)
		}
		return n == len(ms), nil
	}
	var err error
	if l.TrainAttn, err = group("attention", "q_proj", "k_proj", "v_proj", "o_proj"); err != nil {
		return LoraConfig{}, err
	}
	if l.TrainMLP, err = group("mlp", "gate_proj", "up_proj", "down_proj"); err != nil {
		return LoraConfig{}, err
	}
	l.TrainUnembed = has("lm_head")
	known := []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"}
	for _, m := range pc.TargetModules {
		if !slices.Contains(known, m) {
			return bad("target module %q unknown; want some of %v", m, known)
		}
	}
	if err := l.Validate(); err != nil {
		return LoraConfig{}, err
	}
	return l, nil
}

// stateFile holds the optimizer state of a trainer.
const stateFile = "optimizer.safetensors"

// modelFile holds the trained base weights of a full-parameter state.
const modelFile = "model.safetensors"

// SaveAdapter writes the trainer's adapter as a PEFT folder (LoRA mode only).
func (t *Trainer[T]) SaveAdapter(dir string) error {
	if t.ad == nil {
		return fmt.Errorf("engine: SaveAdapter: the trainer trains the full model; use SaveState or SaveBase")
	}
	return SaveAdapter(dir, t.ad, t.opts.BaseName)
}

// SaveState writes everything needed to resume training exactly: the
// weights being trained (a PEFT adapter folder, or model.safetensors in full
// mode) and optimizer.safetensors with Adam's moments (<param>.exp_avg,
// <param>.exp_avg_sq, in the trainer's precision) and the step count.
func (t *Trainer[T]) SaveState(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := "lora"
	if t.opts.Full {
		mode = "full"
		if err := SaveBase(filepath.Join(dir, modelFile), t.base, dtypeOf[T]()); err != nil {
			return err
		}
	} else if err := saveAdapter(dir, t.ad, t.opts.BaseName); err != nil {
		return err
	}
	var ts []safetensors.Named
	for _, p := range t.ps {
		m, err := encodeT(p.name+".exp_avg", p.shape, p.m, dtypeOf[T]())
		if err != nil {
			return err
		}
		v, err := encodeT(p.name+".exp_avg_sq", p.shape, p.v, dtypeOf[T]())
		if err != nil {
			return err
		}
		ts = append(ts, m, v)
	}
	meta := map[string]string{metaStep: strconv.Itoa(t.step), metaMode: mode}
	return safetensors.WriteFile(filepath.Join(dir, stateFile), ts, meta)
}

// LoadState restores a state written by SaveState. It replaces the trained
// weights (in LoRA mode the adapter, whose LoraConfig may differ from the
// trainer's) and clears accumulated gradients. With withOptimizer it also
// restores Adam's moments and the step count; without, the optimizer starts
// fresh (step 0). On error the trainer is unchanged.
func (t *Trainer[T]) LoadState(dir string, withOptimizer bool) error {
	var (
		base *Model[T]
		ad   *Adapter[T]
		err  error
	)
	if t.opts.Full {
		if base, err = LoadBase[T](filepath.Join(dir, modelFile)); err != nil {
			return err
		}
		if !base.Config.equal(t.cfg) {
			return fmt.Errorf("%w: state is for model %+v, trainer has %+v", ErrShape, base.Config, t.cfg)
		}
	} else if ad, err = LoadAdapter[T](dir, t.cfg); err != nil {
		return err
	}
	next := &Trainer[T]{cfg: t.cfg, base: t.base, opts: t.opts, rope: t.rope, gm: t.gm}
	if base != nil {
		next.base = base
	}
	if ad != nil {
		next.ad, next.gad = ad, newZeroAdapter[T](t.cfg, ad.Lora)
	}
	next.buildParams()
	if withOptimizer {
		f, err := safetensors.ReadFile(filepath.Join(dir, stateFile))
		if err != nil {
			return err
		}
		step, err := strconv.Atoi(f.Metadata[metaStep])
		if err != nil || step < 0 {
			return fmt.Errorf("%w: %s: metadata %s = %q is not a step count", ErrShape, stateFile, metaStep, f.Metadata[metaStep])
		}
		var want []expected[T]
		for _, p := range next.ps {
			want = append(want, expected[T]{p.name + ".exp_avg", p.shape, p.m}, expected[T]{p.name + ".exp_avg_sq", p.shape, p.v})
		}
		if err := readTensors(f, want, stateFile); err != nil {
			return err
		}
		next.step = step
	}
	if t.opts.Full {
		t.base = next.base
	}
	t.ad, t.gad, t.ps, t.step = next.ad, next.gad, next.ps, next.step
	t.ZeroGrad()
	return nil
}
