package algo_test

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ExampleGroupAdvantages() {
	adv, uniform := algo.GroupAdvantages(nil, []float64{1, 0, 0, 1}, false)
	fmt.Println(adv, uniform)
	_, uniform = algo.GroupAdvantages(nil, []float64{1, 1, 1}, false)
	fmt.Println(uniform)
	// Output:
	// [0.5 -0.5 -0.5 0.5] false
	// true
}

// Each objective is one of the trainer's built-in losses; only decoupled
// rewrites the datums after an extra forward pass.
func ExampleGRPO_Loss() {
	for _, obj := range algo.Objectives() {
		g, err := algo.New(algo.Config{Objective: obj}, nil)
		if err != nil {
			panic(err)
		}
		l := g.Loss()
		fmt.Println(obj, l.Name, l.Config[rl.ClipLowThreshold], l.Config[rl.ClipHighThreshold])
	}
	// Output:
	// naive importance_sampling 0 0
	// ppo ppo 0.8 1.2
	// tis cispo 0 2
	// decoupled ppo 0.8 1.2
}
