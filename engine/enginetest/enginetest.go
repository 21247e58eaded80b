// Package enginetest gives tests small embedded models: random weights over
// the shipped character vocabulary, small enough that race-instrumented unit
// tests train and sample them in milliseconds. It is imported by test files
// only.
package enginetest

import (
	"testing"

	"github.com/tandemrl/tandem/engine"
)

// Config is the tiny shape tests use: the shipped vocabulary, width 16, 2
// heads, SwiGLU width 32, with the given number of layers and context.
func Config(layers, context int) engine.Config {
	return engine.Config{Vocab: engine.VocabSize, Dim: 16, Layers: layers, Heads: 2, Hidden: 32, Context: context}
}

// Model returns a model of Config(layers, context) with weights drawn from
// seed (the same seed gives the same weights). A shape the engine rejects
// fails tb.
func Model(tb testing.TB, layers, context int, seed uint64) *engine.Model[float32] {
	tb.Helper()
	m, err := engine.NewModel[float32](Config(layers, context), seed)
	if err != nil {
		tb.Fatalf("enginetest: %v", err)
	}
	return m
}
