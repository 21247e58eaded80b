package policy

import "time"

// Ref refers to a saved adapter: what a trainer returns when it saves
// weights and what a sampler loads.
type Ref struct {
	// Run is the run that produced the adapter.
	Run string `json:"run,omitempty"`
	// Version is the policy version the adapter holds.
	Version Version `json:"version"`
	// Name is the checkpoint name given at save time.
	Name string `json:"name,omitempty"`
	// URI locates the adapter: a local folder path or a tinker:// URI
	// (tinker://<run>/sampler_weights/<name>).
	URI string `json:"uri"`
	// Kind says what was saved: sampler weights only, or full training
	// state (weights and optimizer).
	Kind Kind `json:"kind"`
	// Created is when the save completed.
	Created time.Time `json:"created,omitzero"`
}

// Tag returns the ref's run and version as a tag.
func (r Ref) Tag() Tag { return Tag{Run: r.Run, Version: r.Version} }

// Kind says what a saved checkpoint holds.
type Kind string

const (
	// SamplerWeights is an adapter for sampling, without optimizer state.
	SamplerWeights Kind = "sampler_weights"
	// State is the full training state: adapter and optimizer state.
	State Kind = "weights"
)
