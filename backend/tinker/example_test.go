package tinker_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

// A training step and a sample against a Tinker-compatible server (here
// tandem's own, over a fake backend). Against Tinker, only BaseURL and
// APIKey change (or TINKER_BASE_URL and TINKER_API_KEY).
func Example() {
	srv, _ := server.New(server.Config{APIKeys: []string{"example-key-123"}}, server.Options{Backend: &servertest.Backend{}})
	hs := httptest.NewServer(srv)
	defer func() {
		hs.Close()
		if err := srv.Close(context.Background()); err != nil { // nothing is in flight by then
			panic(err)
		}
	}()

	ctx := context.Background()
	c, err := tinker.New(ctx, tinker.Options{BaseURL: hs.URL, APIKey: "example-key-123"})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	tr, err := c.NewTrainer(ctx, "tiny-base", wire.LoraConfig{Rank: 8})
	if err != nil {
		panic(err)
	}
	datum := rl.Datum{ModelInput: rl.Tokens([]int{1, 2}), LossFnInputs: map[string]rl.TensorData{
		rl.InputTargetTokens: rl.IntTensor([]int{2, 3}),
	}}
	// Submit both, then wait: the step is pipelined behind the pass.
	fb := tr.ForwardBackward(ctx, []rl.Datum{datum}, rl.Loss{Name: rl.CrossEntropy})
	step := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1e-4})
	if _, err := fb.Wait(ctx); err != nil {
		panic(err)
	}
	st, _ := step.Wait(ctx)
	ref, _ := tr.SaveForSampler(ctx, "step-1").Wait(ctx)

	smp := c.NewSampler("tiny-base")
	if err := smp.Load(ctx, ref); err != nil {
		panic(err)
	}
	out, _ := smp.Sample(ctx, rl.Tokens([]int{5}), 1, rl.SamplingParams{MaxTokens: 3})
	fmt.Println("version after step:", st.Version)
	fmt.Println("sampled", len(out.Sequences[0].Tokens), "tokens at version", out.Version)
	// Output:
	// version after step: 1
	// sampled 3 tokens at version 1
}
