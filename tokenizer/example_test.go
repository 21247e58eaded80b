package tokenizer_test

import (
	"fmt"
	"os"

	"github.com/tandemrl/tandem/tokenizer"
)

// A small Qwen3-shaped tokenizer (testdata/bytelevel.json): byte-level BPE
// behind the Qwen split pattern, with added tokens.
func Example() {
	data, err := os.ReadFile("testdata/bytelevel.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := tokenizer.Parse(data, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode("<think>The tokenizer reads the text.</think>", tokenizer.EncodeOptions{})
	fmt.Println(len(ids), "ids")
	text, _ := tok.Decode(ids, false)
	fmt.Println(text)

	// Special tokens: matched in text unless SplitSpecialTokens, dropped
	// by Decode with skipSpecial.
	withBOS := tok.Encode("hi", tokenizer.EncodeOptions{AddSpecialTokens: true})
	bos, _ := tok.Token(withBOS[0])
	fmt.Println(bos, tok.IsSpecial(withBOS[0]))
	text, _ = tok.Decode(withBOS, true)
	fmt.Println(text)
	// Output:
	// 8 ids
	// <think>The tokenizer reads the text.</think>
	// <|bos|> true
	// hi
}

// Streaming: text comes out as soon as its bytes are complete UTF-8.
func ExampleStreamDecoder() {
	data, _ := os.ReadFile("testdata/bytelevel.json")
	tok, _ := tokenizer.Parse(data, nil)
	d := tok.NewStreamDecoder(false)
	for _, id := range tok.Encode("ok 😀", tokenizer.EncodeOptions{}) {
		piece, _ := d.Next(id)
		fmt.Printf("%q ", piece)
	}
	fmt.Printf("%q\n", d.Flush())
	// Output:
	// "o" "k" " " "" "" "" "😀" ""
}
