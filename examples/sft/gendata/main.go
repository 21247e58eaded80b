// Command gendata writes the SFT example's dataset: correct answers to a
// fixed sample of the arithmetic task's training problems (never a held-out
// one), one {"prompt", "completion"} object per line. It is deterministic:
// running it again writes the same file.
//
//	go run ./examples/sft/gendata -o examples/sft/data.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"

	"github.com/tandemrl/tandem/sft"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

func main() {
	out := flag.String("o", "data.jsonl", "output file")
	n := flag.Int("n", 400, "number of examples")
	seed := flag.Uint64("seed", 1, "which training problems to take")
	flag.Parse()

	train, _ := arithmetic.Split()
	if *n < 1 || *n > len(train) {
		log.Fatalf("gendata: -n %d must be in [1, %d]", *n, len(train))
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	pick := rng.Perm(len(train))[:*n]

	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, i := range pick {
		p := train[i]
		// The completion is what the model should write after the prompt:
		// a space, the sum, and the newline the sampler stops at.
		if err := enc.Encode(sft.Example{Prompt: p.Prompt(), Completion: fmt.Sprintf(" %d\n", p.Answer())}); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %d examples to %s\n", *n, *out)
}
