package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/tandemrl/tandem/engine"
)

// Concurrent Sample calls share the sampler's batched steps, and each call
// keeps the version it started with: here eight calls run at once, half on
// the base and half on an adapter prepared for them, and each gives the
// very tokens it gives alone.
func ExampleSampler_SampleWith() {
	ctx := context.Background()
	cfg := engine.Config{Vocab: engine.VocabSize, Dim: 32, Layers: 2, Heads: 4, Hidden: 64, Context: 64}
	base, err := engine.NewModel[float32](cfg, 1)
	if err != nil {
		panic(err)
	}
	ad, err := engine.NewAdapter[float32](cfg, engine.DefaultLoraConfig())
	if err != nil {
		panic(err)
	}
	s, err := engine.NewSampler(base, engine.SamplerOptions{Threads: 2})
	if err != nil {
		panic(err)
	}
	v0 := s.Served() // the base
	v1, err := s.Prepare(ad)
	if err != nil {
		panic(err)
	}
	prompt := []int{engine.BOS, 10, 20, 30}
	call := func(i int) []engine.Sequence {
		w := []*engine.Served[float32]{v0, v1}[i%2]
		seqs, _, err := s.SampleWith(ctx, w, prompt, 1+i%3, engine.SamplingParams{MaxTokens: 12, Temperature: 1, Seed: int64(i)})
		if err != nil {
			panic(err)
		}
		return seqs
	}
	alone := make([][]engine.Sequence, 8)
	for i := range alone {
		alone[i] = call(i)
	}
	batched := make([][]engine.Sequence, 8)
	var wg sync.WaitGroup
	for i := range batched {
		wg.Go(func() { batched[i] = call(i) })
	}
	wg.Wait()
	fmt.Println("batched calls give what they give alone:", reflect.DeepEqual(alone, batched))
	if err := s.Close(); err != nil { // waits for the scheduler: its figures are final
		panic(err)
	}
	st := s.Stats()
	fmt.Println("calls answered:", st.Completed, "KV memory still held:", st.KVAllocatedBytes)
	// Output:
	// batched calls give what they give alone: true
	// calls answered: 16 KV memory still held: 0
}
