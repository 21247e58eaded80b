package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// edit returns the JSON of the byte-level test tokenizer with one part
// replaced (set) or removed (nil value with del).
func edit(t *testing.T, path string, value any) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(byteLevelJSON(t), &m))
	keys := strings.Split(path, ".")
	cur := m
	for _, k := range keys[:len(keys)-1] {
		cur = cur[k].(map[string]any)
	}
	if value == "<delete>" {
		delete(cur, keys[len(keys)-1])
	} else {
		cur[keys[len(keys)-1]] = value
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	good := byteLevelJSON(t)
	split := func(extra map[string]any) map[string]any {
		m := map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "a"}, "behavior": "Isolated", "invert": false}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name        string
		data        []byte
		path        string // the LoadError's Path
		msg         string // a part of its message
		unsupported bool
	}{
		{"truncated", good[:len(good)/2], "", "unexpected end of input", false},
		{"empty", nil, "", "unexpected end of input", false},
		{"trailing data", append(append([]byte{}, good...), "{}"...), "", "after the top-level value", false},
		{"not an object", []byte(`[1, 2]`), "", "want an object", false},
		{"bad literal", []byte(`{"version": tru}`), "", `want true`, false},
		{"bad escape", []byte(`{"version": "\q"}`), "", `bad escape`, false},
		{"lone surrogate", []byte(`{"version": "\ud800"}`), "", `lone surrogate`, false},
		{"invalid UTF-8", []byte("{\"version\": \"\xff\"}"), "", `invalid UTF-8`, false},
		{"control character", []byte("{\"version\": \"a\x01\"}"), "", `control character`, false},
		{"deep nesting", []byte(strings.Repeat("[", 600) + strings.Repeat("]", 600)), "", "nesting deeper", false},
		{"version", edit(t, "version", "2.0"), "version", `unknown tokenizer.json version "2.0"`, false},
		{"truncation", edit(t, "truncation", map[string]any{"max_length": 512}), "truncation", "truncation is set", true},
		{"padding", edit(t, "padding", map[string]any{"strategy": "BatchLongest"}), "padding", "padding is set", true},
		{"no model", edit(t, "model", "<delete>"), "", `missing "model"`, false},
		{"model not an object", edit(t, "model", []int{1}), "model", "want an object, got an array", false},
		{"Unigram", edit(t, "model.type", "Unigram"), "model", `unsupported type "Unigram" (supported: BPE, WordLevel)`, true},
		{"WordPiece", edit(t, "model.type", "WordPiece"), "model", `unsupported type "WordPiece"`, true},
		{"unknown model", edit(t, "model.type", "Magic"), "model", `unknown type "Magic"`, true},
		{"vocab not an object", edit(t, "model.vocab", []int{1}), "model.vocab", "want an object of token ids, got an array", false},
		{"vocab id not an integer", edit(t, "model.vocab", map[string]any{"a": 1.5}), `model.vocab["a"]`, "want a token id", false},
		{"vocab id negative", edit(t, "model.vocab", map[string]any{"a": -1}), `model.vocab["a"]`, "want a token id", false},
		{"vocab id too large", edit(t, "model.vocab", map[string]any{"a": 3000000000}), `model.vocab["a"]`, "too large", false},
		{"no merges", edit(t, "model.merges", "<delete>"), "model", `missing "merges"`, false},
		{"mixed merges", edit(t, "model.merges", []any{"Ġ t", []string{"h", "e"}}), "model.merges[1]", "not both", false},
		{"merge of three", edit(t, "model.merges", []any{"Ġ t x"}), "model.merges[0]", "merge 1: want two tokens separated by one space", false},
		{"merge of one", edit(t, "model.merges", []any{[]string{"a"}}), "model.merges[0]", "want a pair of two tokens", false},
		{"merge not in vocab", edit(t, "model.merges", []any{"Ġ ✓"}), "model.merges", `merge 1 ("Ġ" "✓"): "✓" is not in the vocabulary`, false},
		{"dropout", edit(t, "model.dropout", 0.1), "model.dropout", "dropout 0.1 is not supported", true},
		{"unk not in vocab", edit(t, "model.unk_token", "<unk>"), "model.unk_token", `"<unk>" is not in the vocabulary`, false},
		{"flag not a bool", edit(t, "model.byte_fallback", "yes"), "model.byte_fallback", "want true or false, got a string", false},
		{"Precompiled", edit(t, "normalizer", map[string]any{"type": "Precompiled", "precompiled_charsmap": "x"}), "normalizer", `unsupported type "Precompiled"`, true},
		{"normalizer in sequence", edit(t, "normalizer", map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFC"}, map[string]any{"type": "Bert"}}}), "normalizer.normalizers[1]", `unsupported type "Bert"`, true},
		{"normalizer without type", edit(t, "normalizer", map[string]any{"lowercase": true}), "normalizer", `missing "type"`, false},
		{"UnicodeScripts", edit(t, "pre_tokenizer.pretokenizers", []any{split(nil), map[string]any{"type": "UnicodeScripts"}}),
			"pre_tokenizer.pretokenizers[1]", `unsupported type "UnicodeScripts" (supported: Split, ByteLevel,`, true},
		{"bad regex", edit(t, "pre_tokenizer.pretokenizers", []any{split(map[string]any{"pattern": map[string]any{"Regex": "a("}})}),
			"pre_tokenizer.pretokenizers[0].pattern.Regex", `cannot compile "a("`, false},
		{"bad pattern", edit(t, "pre_tokenizer.pretokenizers", []any{split(map[string]any{"pattern": "a"})}),
			"pre_tokenizer.pretokenizers[0].pattern", `want {"String": "..."} or {"Regex": "..."}`, false},
		{"bad behavior", edit(t, "pre_tokenizer.pretokenizers", []any{split(map[string]any{"behavior": "Merged"})}),
			"pre_tokenizer.pretokenizers[0].behavior", `want one of Isolated`, false},
		{"metaspace prefix flags", edit(t, "pre_tokenizer", map[string]any{"type": "Metaspace", "replacement": "▁", "add_prefix_space": false}),
			"pre_tokenizer.add_prefix_space", "does not match prepend_scheme", false},
		{"metaspace replacement", edit(t, "pre_tokenizer", map[string]any{"type": "Metaspace", "replacement": "ab"}),
			"pre_tokenizer.replacement", "want a one-character string", false},
		{"WordPiece decoder", edit(t, "decoder", map[string]any{"type": "WordPiece", "prefix": "##"}), "decoder", `unsupported type "WordPiece"`, true},
		{"decoder in sequence", edit(t, "decoder", map[string]any{"type": "Sequence", "decoders": []any{map[string]any{"type": "Fuse"}, map[string]any{"type": "CTC"}}}), "decoder.decoders[1]", `unsupported type "CTC"`, true},
		{"post processor", edit(t, "post_processor", map[string]any{"type": "Magic"}), "post_processor", `unknown type "Magic"`, true},
		{"template without its token", edit(t, "post_processor.special_tokens", map[string]any{}), "post_processor.single[0].SpecialToken", `special token "<|bos|>" is not in special_tokens`, false},
		{"template with B", edit(t, "post_processor.single", []any{map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 0}}}), "post_processor.single", "uses sequence B", true},
		{"added tokens not a list", edit(t, "added_tokens", map[string]any{}), "added_tokens", "want an array", false},
		{"added token without content", edit(t, "added_tokens", []any{map[string]any{"id": 1}}), "added_tokens[0]", `missing "content"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(c.data, nil)
			require.Error(t, err)
			var le *LoadError
			require.True(t, errors.As(err, &le), "%v", err)
			assert.Equal(t, "tokenizer.json", le.File)
			assert.Equal(t, c.path, le.Path, "%v", err)
			assert.Contains(t, err.Error(), c.msg)
			assert.Equal(t, c.unsupported, errors.Is(err, ErrUnsupported), "%v", err)
		})
	}
}

func TestLoadErrorNamesTheFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Load(dir)
	require.Error(t, err)
	assert.True(t, errors.Is(err, os.ErrNotExist))
	require.NoError(t, os.WriteFile(dir+"/tokenizer.json", []byte(`{`), 0o644))
	_, err = Load(dir)
	assert.ErrorContains(t, err, "load "+dir+": tokenizer.json: invalid JSON at line 1, column 2")
}

func TestLoadWithConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/tokenizer.json", byteLevelJSON(t), 0o644))
	tok, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, Config{}, tok.Config(), "no tokenizer_config.json: the zero Config")
	require.NoError(t, os.WriteFile(dir+"/tokenizer_config.json", []byte(`{"eos_token": "<|end|>"}`), 0o644))
	tok, err = Load(dir)
	require.NoError(t, err)
	assert.Equal(t, "<|end|>", tok.Config().EOSToken)
	require.NoError(t, os.WriteFile(dir+"/tokenizer_config.json", []byte(`{"eos_token": 3}`), 0o644))
	_, err = Load(dir)
	assert.ErrorContains(t, err, "tokenizer_config.json: eos_token: want a string or an object")
}

func TestVocabularyAccessors(t *testing.T) {
	t.Parallel()
	tok := mustParse(t, byteLevelJSON(t))
	base := tok.model.vocabulary().size()
	assert.Equal(t, base+4, tok.VocabSize())
	bos, ok := tok.TokenID("<|bos|>")
	require.True(t, ok)
	assert.Equal(t, base, bos, "added tokens take the ids after the model's")
	assert.True(t, tok.IsSpecial(bos))
	think, _ := tok.TokenID("<think>")
	assert.False(t, tok.IsSpecial(think))
	assert.False(t, tok.IsSpecial(5))
	s, ok := tok.Token(bos)
	assert.True(t, ok)
	assert.Equal(t, "<|bos|>", s)
	id, ok := tok.TokenID("Ġ")
	assert.True(t, ok)
	s, _ = tok.Token(id)
	assert.Equal(t, "Ġ", s)
	_, ok = tok.Token(-1)
	assert.False(t, ok)
	_, ok = tok.Token(tok.VocabSize())
	assert.False(t, ok)
	_, ok = tok.TokenID("no such token")
	assert.False(t, ok)

	// Gemma-style: an added token already in the vocabulary keeps its id
	// and does not count twice; a normalized one decodes normalized.
	flags := mustParse(t, flagsJSON(t))
	cat, _ := flags.TokenID("CAT")
	s, _ = flags.Token(cat)
	assert.Equal(t, "cat", s)
	// Eight added tokens, of which "ñ" is already a ByteLevel character of
	// the vocabulary and "" is ignored.
	assert.Equal(t, 256+7, flags.VocabSize())
}

func TestSparseVocabulary(t *testing.T) {
	t.Parallel()
	// One huge id must not make a huge table.
	tok := mustParse(t, tokJSON(t, map[string]any{
		"model": map[string]any{"type": "WordLevel", "vocab": map[string]int{"a": 0, "<unk>": 2000000000}, "unk_token": "<unk>"},
	}))
	assert.Nil(t, tok.model.vocabulary().dense)
	assert.Equal(t, []int{0}, tok.Encode("a", EncodeOptions{}))
	assert.Equal(t, []int{2000000000}, tok.Encode("b", EncodeOptions{}))
	s, ok := tok.Token(2000000000)
	assert.True(t, ok)
	assert.Equal(t, "<unk>", s)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cases := []struct {
		json string
		want Config
	}{
		{`{}`, Config{}},
		{`{"bos_token": "<s>", "eos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": false},
		   "pad_token": null, "unk_token": "<unk>", "add_bos_token": true, "add_eos_token": false,
		   "tokenizer_class": "LlamaTokenizer", "model_max_length": 4096, "chat_template": "{{ x }}", "other": [1, {"a": 2}]}`,
			Config{BOSToken: "<s>", EOSToken: "</s>", UnkToken: "<unk>", AddBOSToken: &yes, AddEOSToken: &no,
				TokenizerClass: "LlamaTokenizer", ModelMaxLength: 4096, ChatTemplate: "{{ x }}"}},
		{`{"model_max_length": 1000000000000000019884624838656}`, Config{}},
		{`{"model_max_length": 2.5}`, Config{}},
		{`{"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]}`,
			Config{ChatTemplate: "D", ChatTemplates: map[string]string{"default": "D", "tool_use": "T"}}},
		{`{"chat_template": [{"name": "rag", "template": "R"}]}`,
			Config{ChatTemplates: map[string]string{"rag": "R"}}},
	}
	for _, c := range cases {
		got, err := parseConfig([]byte(c.json))
		require.NoError(t, err, c.json)
		assert.Equal(t, c.want, got, c.json)
	}
	for _, bad := range []struct{ json, msg string }{
		{`{"bos_token": 1}`, "bos_token: want a string or an object"},
		{`{"eos_token": {"text": "x"}}`, `eos_token: missing "content"`},
		{`{"add_bos_token": "yes"}`, "add_bos_token: want true or false"},
		{`{"chat_template": 3}`, "chat_template: want a string or a list"},
		{`{"chat_template": [{"name": "x"}]}`, `chat_template[0]: missing "template"`},
		{`{"bos_token": "x"`, "invalid JSON"},
	} {
		_, err := parseConfig([]byte(bad.json))
		assert.ErrorContains(t, err, "tokenizer_config.json: "+bad.msg, bad.json)
	}
}
