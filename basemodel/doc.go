// Package basemodel is the embedded engine's shipped base model: the recipe
// that pretrains it from a seed on the noisy arithmetic corpus of
// tasks/arithmetic, and the weights themselves, embedded in the binary.
package basemodel
