package buffer_test

import (
	"context"
	"fmt"

	"github.com/tandemrl/tandem/buffer"
	"github.com/tandemrl/tandem/rl"
)

// A rollout worker admits, rolls out and puts; the learner takes batches.
// With k = 0 and pacing, the second batch cannot start until the sampler
// serves version 1.
func Example() {
	ctx := context.Background()
	b, err := buffer.New(buffer.Config{GroupsPerBatch: 2, MaxStaleness: 0, Policy: rl.Pace}, nil)
	if err != nil {
		panic(err)
	}
	b.Serve(0) // the sampler serves version 0
	for id := range uint64(2) {
		admitted, _ := b.Admit(ctx)
		_ = b.Put(ctx, rl.Group{ID: id, Admitted: admitted, Version: admitted})
	}
	batch, _ := b.Take(ctx, 0, nil)
	fmt.Println("step 0 trains", len(batch), "groups")

	b.Serve(1) // the learner published version 1 and the sampler loaded it
	admitted, _ := b.Admit(ctx)
	fmt.Println("next rollout admitted at version", admitted)
	st := b.Stats()
	fmt.Println("trained", st.Trained, "dropped", st.Dropped)
	// Output:
	// step 0 trains 2 groups
	// next rollout admitted at version 1
	// trained 2 dropped 0
}
