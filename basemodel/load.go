package basemodel

import (
	_ "embed"
	"fmt"
	"sync"

	"github.com/tandemrl/tandem/engine"
)

// weights is the shipped base model: F16 safetensors written by
// `tandem pretrain` with DefaultPretrainConfig (see base.safetensors.recipe.json).
//
//go:embed base.safetensors
var weights []byte

// Recipe file shipped beside the weights.
//
//go:embed base.safetensors.recipe.json
var recipeJSON []byte

var (
	parseOnce sync.Once
	parsed    *engine.Model[float32]
	parseErr  error
)

// Load returns a copy of the shipped base model (float32). The first call
// parses the embedded file; later calls copy.
func Load() (*engine.Model[float32], error) {
	parseOnce.Do(func() {
		parsed, parseErr = engine.ParseBase[float32](weights)
		if parseErr != nil {
			parseErr = fmt.Errorf("basemodel: shipped weights: %w", parseErr)
		}
	})
	if parseErr != nil {
		return nil, parseErr
	}
	return parsed.Clone(), nil
}

// Bytes returns the shipped weights file. The caller must not modify it.
func Bytes() []byte { return weights }

// ShippedRecipe returns the recipe that produced the shipped weights.
func ShippedRecipe() []byte { return recipeJSON }
