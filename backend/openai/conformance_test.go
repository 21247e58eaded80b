package openai

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// Conformance: the fixtures in testdata were written from vLLM's and
// SGLang's protocol definitions (testdata/README.md names the files and
// commits); the encoders must produce them exactly and the decoders read
// them field by field.

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func asMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func encoded(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return asMap(t, b)
}

// jsonNames lists the JSON names of a struct type's fields.
func jsonNames(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

var fixtureGen = genRequest{
	model: "tandem-run1-v000017", prompt: []int{1, 15, 27, 8}, n: 2, maxTokens: 16, seed: 1234,
	p:              rl.SamplingParams{MaxTokens: 16, Temperature: 1, StopTokens: []int{2}},
	promptLogprobs: true,
}

func TestConformanceVLLMRequest(t *testing.T) {
	t.Parallel()
	got := encoded(t, encodeCompletion(fixtureGen))
	want := asMap(t, fixture(t, "vllm_completion_request.json"))
	for k, v := range want {
		assert.Equal(t, v, got[k], "field %s", k)
	}
	for k := range got {
		assert.Contains(t, want, k, "field %s sent but not in the fixture", k)
	}
	var fields struct{ Fields []string }
	require.NoError(t, json.Unmarshal(fixture(t, "vllm_completion_request_fields.json"), &fields))
	for k := range got {
		assert.Contains(t, fields.Fields, k, "field %s is not a CompletionRequest field", k)
	}
	load := encoded(t, vllmLoadRequest{LoraName: "tandem-run1-v000017", LoraPath: "/ckpt/run1/v17"})
	assert.Equal(t, asMap(t, fixture(t, "vllm_load_request.json")), load)
}

func TestConformanceVLLMResponse(t *testing.T) {
	t.Parallel()
	b := fixture(t, "vllm_completion_response.json")
	// Every field the decoder reads is a field of the protocol's choice.
	raw := asMap(t, b)
	choice := raw["choices"].([]any)[0].(map[string]any)
	for _, name := range jsonNames(reflect.TypeFor[vllmChoice]()) {
		assert.Contains(t, choice, name, "decoder field %s not in CompletionResponseChoice", name)
	}
	lp := choice["logprobs"].(map[string]any)
	for _, name := range jsonNames(reflect.TypeFor[vllmLogprobs]()) {
		assert.Contains(t, lp, name, "decoder field %s not in CompletionLogProbs", name)
	}

	r := fixtureGen
	r.topK = 1
	res, err := decodeCompletion(b, r)
	require.NoError(t, err)
	assert.Equal(t, []rl.Sequence{
		{Tokens: []int{42, 17, 2}, Logprobs: []float64{-0.4113, -1.2702, -0.0201}, StopReason: rl.StopLength},
		{Tokens: []int{7, 2}, Logprobs: []float64{-0.125, -9999}, StopReason: rl.StopStop},
	}, res.seqs, "choices ordered by index")
	assert.Equal(t, []float64{0, -3.21, -0.5, -2.0}, res.prompt)
	assert.Equal(t, [][]rl.TokenLogprob{nil, {{Token: 15, Logprob: -3.21}}, {{Token: 27, Logprob: -0.5}}, {{Token: 3, Logprob: -1}}}, res.promptTopK)

	// An older server without return_token_ids: ids from "token_id:N".
	res, err = decodeCompletion(fixture(t, "vllm_completion_response_no_token_ids.json"), genRequest{n: 1, maxTokens: 2})
	require.NoError(t, err)
	assert.Equal(t, []int{42, 17}, res.seqs[0].Tokens)
	assert.Equal(t, []float64{-0.5, -0.25}, res.seqs[0].Logprobs)

	// Lengths that disagree are refused.
	bad := strings.Replace(string(b), `"token_ids": [42, 17, 2]`, `"token_ids": [42, 17]`, 1)
	_, err = decodeCompletion([]byte(bad), r)
	assert.ErrorIs(t, err, ErrMalformed)
	_, err = decodeCompletion(b, genRequest{n: 3, maxTokens: 16})
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestConformanceVLLMModelsAndErrors(t *testing.T) {
	t.Parallel()
	var ml vllmModelList
	require.NoError(t, json.Unmarshal(fixture(t, "vllm_models.json"), &ml))
	require.Len(t, ml.Data, 2)
	assert.Equal(t, 4096, *ml.Data[0].MaxModelLen)
	assert.Nil(t, ml.Data[0].Parent)
	assert.Nil(t, ml.Data[1].MaxModelLen)
	assert.Equal(t, "/ckpt/run1/v17", *ml.Data[1].Root)
	card := asMap(t, fixture(t, "vllm_models.json"))["data"].([]any)[0].(map[string]any)
	for _, name := range jsonNames(reflect.TypeFor[vllmModelCard]()) {
		assert.Contains(t, card, name)
	}

	var cases []struct {
		Status  int
		Body    json.RawMessage
		Message string
		Type    string
		Param   string
		Detail  bool
	}
	require.NoError(t, json.Unmarshal(fixture(t, "vllm_errors.json"), &cases))
	for _, c := range cases {
		se := newStatusError("POST", "/x", c.Status, c.Body)
		assert.Equal(t, c.Message, se.Message)
		assert.Equal(t, c.Type, se.Type)
		assert.Equal(t, c.Param, se.Param)
		assert.Equal(t, c.Detail, se.Detail)
	}
}

func TestConformanceSGLang(t *testing.T) {
	t.Parallel()
	s := &sglang{baseName: "Qwen/Qwen3-0.6B"}
	r := fixtureGen
	r.promptLogprobs = false
	got := encoded(t, s.encodeGenerate(r))
	assert.Equal(t, asMap(t, fixture(t, "sglang_generate_request.json")), got)

	var fields struct {
		Generate, Sampling, Load, Unload []string
	}
	require.NoError(t, json.Unmarshal(fixture(t, "sglang_fields.json"), &fields))
	for k := range got {
		assert.Contains(t, fields.Generate, k, "not a GenerateReqInput field: %s", k)
	}
	for k := range got["sampling_params"].([]any)[0].(map[string]any) {
		assert.Contains(t, fields.Sampling, k, "not a SamplingParams field: %s", k)
	}
	for _, name := range jsonNames(reflect.TypeFor[sglangScoreRequest]()) {
		assert.True(t, slices.Contains(fields.Generate, name), name)
	}
	for _, name := range jsonNames(reflect.TypeFor[sglangLoadRequest]()) {
		assert.Contains(t, fields.Load, name)
	}
	for _, name := range jsonNames(reflect.TypeFor[sglangUnloadRequest]()) {
		assert.Contains(t, fields.Unload, name)
	}

	res, err := decodeGenerate(fixture(t, "sglang_generate_response.json"), genRequest{n: 2, maxTokens: 16})
	require.NoError(t, err)
	assert.Equal(t, []rl.Sequence{
		{Tokens: []int{42, 17, 2}, Logprobs: []float64{-0.4113, -1.2702, -0.0201}, StopReason: rl.StopStop},
		{Tokens: []int{9}, Logprobs: []float64{-0.75}, StopReason: rl.StopLength},
	}, res.seqs)
	bad := strings.Replace(string(fixture(t, "sglang_generate_response.json")), `"output_ids": [9]`, `"output_ids": [8]`, 1)
	_, err = decodeGenerate([]byte(bad), genRequest{n: 2, maxTokens: 16})
	assert.ErrorIs(t, err, ErrMalformed)

	sc, err := decodeScore(fixture(t, "sglang_score_response.json"), []int{1, 15, 27}, 1)
	require.NoError(t, err)
	assert.Equal(t, []float64{0, -3.21, -0.5}, sc.prompt)
	assert.Equal(t, [][]rl.TokenLogprob{nil, {{Token: 3, Logprob: -1}}, {{Token: 27, Logprob: -0.5}}}, sc.promptTopK)

	var lo sglangLoRAOutput
	require.NoError(t, json.Unmarshal(fixture(t, "sglang_load_failure.json"), &lo))
	assert.False(t, lo.Success)
	err = classifyLoad(SGLang, "a", "/p", &StatusError{Status: 200, Message: *lo.ErrorMessage})
	assert.ErrorIs(t, err, ErrAdapterRank)
}
