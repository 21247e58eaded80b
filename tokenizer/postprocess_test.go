package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPostProcessors(t *testing.T) {
	t.Parallel()
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2, "a": 3, "b": 4}
	tmpl := func(single []any) map[string]any {
		return map[string]any{"type": "TemplateProcessing", "single": single,
			"pair": []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{
				"<s>":  map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}},
				"pair": map[string]any{"id": "pair", "ids": []int{2, 1}, "tokens": []string{"</s>", "<s>"}},
			}}
	}
	seqA := map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}
	special := func(id string) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": 0}}
	}
	cases := []struct {
		name  string
		post  any
		want  []int
		plain []int // without special tokens, when not [3, 4]
	}{
		{"none", nil, []int{3, 4}, nil},
		{"ByteLevel", map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true}, []int{3, 4}, nil},
		{"Roberta", map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 1}}, []int{1, 3, 4, 2}, nil},
		{"Bert", map[string]any{"type": "BertProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 1}}, []int{1, 3, 4, 2}, nil},
		{"template", tmpl([]any{special("<s>"), seqA}), []int{1, 3, 4}, nil},
		{"template, several ids, after", tmpl([]any{seqA, special("pair")}), []int{3, 4, 2, 1}, nil},
		// As in Hugging Face, a template that repeats the sequence repeats
		// it without special tokens too.
		{"template twice", tmpl([]any{seqA, special("<s>"), seqA}), []int{3, 4, 1, 3, 4}, []int{3, 4, 3, 4}},
		{"sequence", map[string]any{"type": "Sequence", "processors": []any{
			map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false},
			tmpl([]any{special("<s>"), seqA}),
			map[string]any{"type": "BertProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 1}},
		}}, []int{1, 1, 2, 3, 4, 2}, nil}, // Bert sees the template's two pieces as a pair
	}
	for _, c := range cases {
		tok := mustParse(t, tokJSON(t, map[string]any{
			"post_processor": c.post,
			"pre_tokenizer":  map[string]any{"type": "Split", "pattern": map[string]any{"String": ""}, "behavior": "Removed", "invert": false},
			"model":          map[string]any{"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
		}))
		assert.Equal(t, c.want, tok.Encode("ab", EncodeOptions{AddSpecialTokens: true}), c.name)
		plain := c.plain
		if plain == nil {
			plain = []int{3, 4}
		}
		assert.Equal(t, plain, tok.Encode("ab", EncodeOptions{}), c.name)
		dst := tok.AppendEncode([]int{9}, "ab", EncodeOptions{AddSpecialTokens: true})
		assert.Equal(t, append([]int{9}, c.want...), dst, c.name)
	}
}
