package chat_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tandemrl/tandem/tokenizer"
)

// fakeTokenizer is a byte tokenizer with added tokens, for tests that need
// no model files: added tokens are matched leftmost-longest (special ones
// not when SplitSpecialTokens is set), every other byte is the token
// 1000+byte. Safe for concurrent use.
type fakeTokenizer struct {
	byText  map[string]int
	byID    map[int]string
	special map[int]bool
	order   []string // added tokens, longest first
}

const fakeByteBase = 1000

// newFakeTokenizer knows the control tokens of every family; "!" marks a
// special token.
func newFakeTokenizer() *fakeTokenizer {
	f := &fakeTokenizer{byText: map[string]int{}, byID: map[int]string{}, special: map[int]bool{}}
	for i, t := range []string{
		"!<|im_start|>", "!<|im_end|>", "!<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
		"<tool_response>", "</tool_response>",
		"!<|begin_of_text|>", "!<|end_of_text|>", "!<|start_header_id|>", "!<|end_header_id|>", "!<|eot_id|>",
		"!<｜begin▁of▁sentence｜>", "!<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
		"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>",
		"<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>", "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>",
		"!<bos>", "!<eos>", "!<start_of_turn>", "!<end_of_turn>",
	} {
		special := strings.HasPrefix(t, "!")
		t = strings.TrimPrefix(t, "!")
		id := i + 1
		f.byText[t], f.byID[id] = id, t
		f.special[id] = special
		f.order = append(f.order, t)
	}
	sort.SliceStable(f.order, func(a, b int) bool { return len(f.order[a]) > len(f.order[b]) })
	return f
}

func (f *fakeTokenizer) Encode(text string, opt tokenizer.EncodeOptions) []int {
	ids := []int{}
	for i := 0; i < len(text); {
		matched := false
		for _, t := range f.order {
			id := f.byText[t]
			if strings.HasPrefix(text[i:], t) && !(opt.SplitSpecialTokens && f.special[id]) {
				ids = append(ids, id)
				i += len(t)
				matched = true
				break
			}
		}
		if !matched {
			ids = append(ids, fakeByteBase+int(text[i]))
			i++
		}
	}
	return ids
}

func (f *fakeTokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		switch t, ok := f.byID[id]; {
		case ok && skipSpecial && f.special[id]:
		case ok:
			b.WriteString(t)
		case id >= fakeByteBase && id < fakeByteBase+256:
			b.WriteByte(byte(id - fakeByteBase))
		default:
			return "", fmt.Errorf("fake tokenizer: id %d out of range", id)
		}
	}
	return b.String(), nil
}

func (f *fakeTokenizer) TokenID(token string) (int, bool) {
	id, ok := f.byText[token]
	return id, ok
}

// fakeConfig is a tokenizer config for the fake (role_colon reads BOS/EOS).
var fakeConfig = tokenizer.Config{BOSToken: "<bos>", EOSToken: "<eos>"}

// encodeWithSpecial matches special tokens, for writing completions.
var encodeWithSpecial = tokenizer.EncodeOptions{}
