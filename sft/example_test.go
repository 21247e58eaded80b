package sft_test

import (
	"fmt"
	"strings"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/sft"
)

func ExampleReadJSONL() {
	exs, err := sft.ReadJSONL(strings.NewReader(`{"prompt": "What is 2 + 3?", "completion": " 5\n"}` + "\n"))
	if err != nil {
		panic(err)
	}
	data, err := sft.Datums(engine.Tokenizer{}, exs, sft.Format{Prefix: []int{engine.BOS}})
	if err != nil {
		panic(err)
	}
	w := data[0].LossFnInputs["weights"].Floats
	trained := 0
	for _, x := range w {
		trained += int(x)
	}
	fmt.Printf("%d input tokens, %d trained (\" 5\\n\")\n", data[0].ModelInput.Len(), trained)

	_, err = sft.ReadJSONL(strings.NewReader(`{"prompt": "a", "completion": "b"}` + "\n" + `{"prompt": "a", "answer": "b"}`))
	fmt.Println(err)
	// Output:
	// 17 input tokens, 3 trained (" 5\n")
	// sft: line 2: field "answer": unknown field; want only "prompt" and "completion"
}

func ExampleSchedule_Factor() {
	s := sft.Schedule{WarmupSteps: 2, Decay: sft.Linear}
	for step := range 6 {
		fmt.Printf("%.2f ", s.Factor(step, 6))
	}
	fmt.Println()
	// Output:
	// 0.50 1.00 1.00 0.75 0.50 0.25
}
