package staleness_test

import (
	"context"
	"fmt"

	"github.com/tandemrl/tandem/sync/staleness"
)

// With k = 1 and 2 groups per batch the gate admits two batches' worth of
// rollouts while the sampler serves version 0, and two more once it serves
// version 1.
func ExampleGate() {
	ctx := context.Background()
	g, err := staleness.NewGate(staleness.Config{MaxStaleness: 1, GroupsPerBatch: 2, Pace: true})
	if err != nil {
		panic(err)
	}
	g.Serve(0)
	for range 4 {
		v, _ := g.Acquire(ctx)
		g.Release(v, true) // the group entered the buffer
	}
	fmt.Println("admitted at version 0:", g.Stats().Admitted)
	_ = g.TakeBatch(ctx) // the learner trains step 0
	g.Serve(1)           // and the sampler loads version 1
	v, _ := g.Acquire(ctx)
	fmt.Println("next rollout admitted at version", v)
	// Output:
	// admitted at version 0: 4
	// next rollout admitted at version 1
}
