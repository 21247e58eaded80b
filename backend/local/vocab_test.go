package local

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
)

// The engine does not import rl, so it spells the protocol's loss names and
// loss_fn_config keys again; the trainer passes them through unconverted,
// which is right only while both spellings agree.
func TestEngineSpellsRLsLossVocabulary(t *testing.T) {
	t.Parallel()
	assert.Equal(t, rl.ClipLowThreshold, engine.ClipLow)
	assert.Equal(t, rl.ClipHighThreshold, engine.ClipHigh)
	assert.Equal(t, rl.DROBeta, engine.Beta)
	for rn, en := range map[rl.LossName]engine.LossName{
		rl.CrossEntropy:       engine.CrossEntropy,
		rl.ImportanceSampling: engine.ImportanceSampling,
		rl.PPO:                engine.PPO,
		rl.CISPO:              engine.CISPO,
		rl.DRO:                engine.DRO,
	} {
		assert.Equal(t, string(rn), string(en))
	}
	// Adam's settings are one type (optim.AdamParams), aliased by both.
	var p rl.AdamParams = engine.AdamParams{LearningRate: 1}
	assert.Equal(t, engine.AdamParams{}.WithDefaults(), rl.AdamParams{}.WithDefaults())
	_ = p
}
