package hf_test

import (
	"fmt"
	"path/filepath"

	"github.com/tandemrl/tandem/engine/hf"
)

func ExampleLoad() {
	m, info, err := hf.Load[float32](filepath.Join("testdata", "qwen3"), hf.WithMaxContext(128))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := m.Config
	fmt.Println(info.ModelType, info.Architecture, "eos", info.EOS)
	fmt.Printf("dim %d, %d heads of %d, %d KV heads, q/k norm %v, tied %v, context %d of %d\n",
		c.Dim, c.Heads, c.HeadDim, c.KVHeads, c.QKNorm, c.TiedEmbed, c.Context, info.MaxPositions)
	fmt.Println("duplicate lm_head dropped:", info.DroppedLMHead)
	// Output:
	// qwen3 Qwen3ForCausalLM eos [2 4]
	// dim 32, 4 heads of 16, 2 KV heads, q/k norm true, tied true, context 128 of 256
	// duplicate lm_head dropped: true
}
