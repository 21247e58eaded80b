package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tandemrl/tandem/engine/safetensors"
)

// vllmRanks are the ranks vLLM's --max-lora-rank accepts (vllm/config/lora.py,
// recent versions).
var vllmRanks = []int{1, 8, 16, 32, 64, 128, 256, 320, 512}

// vllmModules are the module names vLLM's LoRA loader expects for the
// llama, qwen2 and qwen3 families (packed names included).
var vllmModules = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "qkv_proj", "gate_up_proj"}

// loraName matches the name of a LoRA tensor vLLM loads, after base_model.model.
var loraName = regexp.MustCompile(`^model\.layers\.(\d+)\.(self_attn|mlp)\.([a-z_]+)\.lora_([AB])\.weight$`)

// VLLMProblems applies vLLM's rules for loading a PEFT adapter folder
// (vllm/lora/peft_helper.py, lora_model.py, utils.py) to dir, for a base
// of shape cfg, and
// returns every rule broken, sorted: the adapter_config.json fields vLLM
// requires (r among the ranks --max-lora-rank allows, lora_alpha,
// target_modules, modules_to_save null, use_dora false, bias none), tensor
// names under base_model.model. ending in lora_A/B.weight, only the
// modules vLLM loads (no lm_head), and shapes that fit cfg. None means vLLM
// loads it (SGLang's loader takes the same).
func VLLMProblems(dir string, cfg Config) []string {
	var bad []string
	raw, err := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
	if err != nil {
		return []string{err.Error()}
	}
	var pc map[string]any
	if err := json.Unmarshal(raw, &pc); err != nil {
		return []string{"adapter_config.json: " + err.Error()}
	}
	r, _ := pc["r"].(float64)
	if _, ok := pc["lora_alpha"].(float64); !ok {
		bad = append(bad, "lora_alpha missing")
	}
	if !slices.Contains(vllmRanks, int(r)) {
		bad = append(bad, fmt.Sprintf("r %v is not a rank vLLM allows %v", r, vllmRanks))
	}
	if v, ok := pc["modules_to_save"]; !ok || v != nil {
		bad = append(bad, "modules_to_save must be null")
	}
	if pc["use_dora"] != false {
		bad = append(bad, "use_dora must be false")
	}
	if b, _ := pc["bias"].(string); b != "none" {
		bad = append(bad, fmt.Sprintf("bias %q, want none", b))
	}
	if _, ok := pc["target_modules"].([]any); !ok {
		bad = append(bad, "target_modules missing")
	}
	data, err := os.ReadFile(filepath.Join(dir, AdapterWeightsFile))
	if err != nil {
		return append(bad, err.Error())
	}
	f, err := safetensors.Parse(data)
	if err != nil {
		return append(bad, err.Error())
	}
	d, q, kv, h := cfg.Dim, cfg.QDim(), cfg.KVDim(), cfg.Hidden
	io := map[string][2]int{"q_proj": {d, q}, "k_proj": {d, kv}, "v_proj": {d, kv}, "o_proj": {q, d},
		"gate_proj": {d, h}, "up_proj": {d, h}, "down_proj": {h, d}}
	for name, t := range f.Tensors {
		rest, ok := strings.CutPrefix(name, "base_model.model.")
		m := loraName.FindStringSubmatch(rest)
		if !ok || m == nil {
			bad = append(bad, name+" is unsupported LoRA weight")
			continue
		}
		layer, _ := strconv.Atoi(m[1])
		if layer >= cfg.Layers {
			bad = append(bad, name+": no such layer")
		}
		if !slices.Contains(vllmModules, m[3]) {
			bad = append(bad, name+": module "+m[3]+" is not one vLLM loads")
			continue
		}
		in, out := io[m[3]][0], io[m[3]][1]
		want := []int{int(r), in}
		if m[4] == "B" {
			want = []int{out, int(r)}
		}
		if !slices.Equal(t.Shape, want) {
			bad = append(bad, fmt.Sprintf("%s: shape %v, want %v", name, t.Shape, want))
		}
	}
	slices.Sort(bad)
	return bad
}
