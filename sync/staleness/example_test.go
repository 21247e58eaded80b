package staleness_test

import (
	"fmt"

	"github.com/tandemrl/tandem/sync/staleness"
)

// With k = 1 and 2 groups per batch the gate admits two batches' worth of
// rollouts while the sampler serves version 0, and two more once the
// learner has trained step 0 and the sampler serves version 1. (Package
// buffer drives a Core for concurrent use; a driver calls it under a lock.)
func ExampleCore() {
	c, err := staleness.NewCore(staleness.Config{MaxStaleness: 1, GroupsPerBatch: 2, Pace: true})
	if err != nil {
		panic(err)
	}
	c.Serve(0)
	for {
		v, ok := c.Admit()
		if !ok {
			break
		}
		c.Finish(v, true) // the group entered the buffer
	}
	fmt.Println("admitted at version 0:", c.Stats().Admitted)
	fmt.Println("learner may take a batch:", c.CanTake())
	c.Take()   // the learner trains step 0
	c.Serve(1) // and the sampler loads version 1
	v, _ := c.Admit()
	fmt.Println("next rollout admitted at version", v)
	// Output:
	// admitted at version 0: 4
	// learner may take a batch: true
	// next rollout admitted at version 1
}
