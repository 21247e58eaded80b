package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/tasks/arithmetic"
	"github.com/tandemrl/tandem/train"
)

// The example is `tandem train`'s job written against the library: the same
// pipeline, algorithm, reward and adapter as train.DefaultConfig, so that
// what it shows is what the command trains.
func TestTrainsWhatTandemTrainTrains(t *testing.T) {
	t.Parallel()
	d := train.DefaultConfig()
	got := pipeline(d.RL.Steps, d.RL.MaxStaleness)
	want := d.RL
	// The example names its run and saves no training state (it has no
	// checkpoint store).
	want.Run, want.SaveEvery = got.Run, 0
	assert.Equal(t, want, got, "pipeline")
	assert.Equal(t, d.Algo, grpo, "algorithm")
	assert.Equal(t, "arithmetic", d.Task)
	assert.Equal(t, d.FormatWeight, arithmetic.FormatWeight, "reward: format term weight")
	assert.Equal(t, d.Lora, engine.DefaultLoraConfig(), "adapter (local.NewTrainer's default)")
	assert.Equal(t, 1, d.Samplers, "one sampler")
}
