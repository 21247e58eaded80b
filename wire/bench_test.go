package wire

import (
	"encoding/json"
	"testing"

	"github.com/tandemrl/tandem/rl"
)

// BenchmarkDecodeForwardBackward decodes a batch of 64 sequences of 512
// tokens with three loss inputs each (~130k numbers).
func BenchmarkDecodeForwardBackward(b *testing.B) {
	const n, l = 64, 512
	data := make([]rl.Datum, n)
	for i := range data {
		toks := make([]int, l)
		lp := make([]float64, l)
		for j := range toks {
			toks[j] = (i*7 + j) % 32000
			lp[j] = -float64(j%13) / 7
		}
		data[i] = rl.Datum{ModelInput: rl.Tokens(toks), LossFnInputs: map[string]rl.TensorData{
			rl.InputTargetTokens: rl.IntTensor(toks), rl.InputLogprobs: rl.FloatTensor(lp), rl.InputAdvantages: rl.FloatTensor(lp),
		}}
	}
	seq := int64(1)
	body, err := json.Marshal(ForwardBackwardRequest{Input: ForwardBackwardInput{Data: data, Loss: rl.Loss{Name: rl.PPO}}, ModelID: "m", SeqID: &seq})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeForwardBackwardRequest(body, false); err != nil {
			b.Fatal(err)
		}
	}
}
