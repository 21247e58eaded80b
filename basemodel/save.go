package basemodel

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tandemrl/tandem/internal/atomicfile"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/safetensors"
)

// Name is the base model's name in manifests, PEFT configs and the server's
// capabilities.
const Name = "tandem-arith-1m"

// Save writes m to path as F16 safetensors (the shipped form) and the recipe
// that made it beside it, as path + ".recipe.json".
func Save(path string, m *engine.Model[float32], recipe Recipe) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("basemodel: save: %w", err)
	}
	if err := engine.SaveBase(path, m, safetensors.F16); err != nil {
		return fmt.Errorf("basemodel: save: %w", err)
	}
	b, err := json.MarshalIndent(recipe, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path+".recipe.json", append(b, '\n'))
}

// Recipe records how a base model was made and how it came out.
type Recipe struct {
	Name      string         `json:"name"`
	Pretrain  PretrainConfig `json:"pretrain"`
	Params    int            `json:"params"`
	FinalLoss float64        `json:"final_loss"` // mean of the last 100 steps' per-token loss, nats
	Seconds   float64        `json:"seconds"`
	Threads   int            `json:"threads"`
	// Held-out accuracy of the base (one sample per problem), at
	// temperature 1 and greedy.
	HeldOutAccuracyT1     float64 `json:"held_out_accuracy_t1"`
	HeldOutAccuracyGreedy float64 `json:"held_out_accuracy_greedy"`
	// SHA256 is the hash of the saved weights file: a reproduction must
	// match it.
	SHA256 string `json:"sha256"`
	Note   string `json:"note,omitempty"`
}

// ReadRecipe reads a recipe file.
func ReadRecipe(path string) (Recipe, error) {
	var r Recipe
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("basemodel: %s: %w", path, err)
	}
	return r, nil
}
