package splitfast_test

import (
	"fmt"

	"github.com/tandemrl/tandem/tokenizer/internal/splitfast"
)

func ExampleFor() {
	split := splitfast.For(splitfast.PatternQwen2)
	s := "We'RE  at 1998\n\n  ok"
	var pieces []string
	for _, r := range split(nil, s) {
		pieces = append(pieces, s[r[0]:r[1]])
	}
	fmt.Printf("%q\n", pieces)
	fmt.Println(splitfast.For(`\s+`) == nil)
	// Output:
	// ["We" "'RE" " " " at" " " "1" "9" "9" "8" "\n\n" " " " ok"]
	// true
}
