package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/ckptstore"
	"github.com/tandemrl/tandem/server/localbackend"
	"github.com/tandemrl/tandem/wire"
)

// weights_info (the SDK's create_training_client_from_state) answers a
// checkpoint's base model and LoRA settings: on the embedded engine read
// from the checkpoint itself, so that a new server on the same store (a
// restart) answers too; with a backend that cannot read them, from the
// live model that saved it.
func TestWeightsInfo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	m := enginetest.Model(t, 2, 32, 7)
	newServer := func() *harness {
		st, err := checkpoint.Open(root)
		require.NoError(t, err)
		be, err := localbackend.New(localbackend.Options{Bases: map[string]*engine.Model[float32]{base: m}, Store: st})
		require.NoError(t, err)
		return newHarnessWith(t, func(c *server.Config) {
			c.Models = []server.ModelSpec{{Name: base, VocabSize: m.Config.Vocab, MaxContextLength: m.Config.Context}}
		}, func(o *server.Options) { o.Backend = be; o.Store = ckptstore.New(st, ckptstore.Options{}) })
	}
	h := newServer()
	sess := h.session(keyA)
	id := h.submit(keyA, "create_model", fmt.Sprintf(`{"session_id":%q,"model_seq_id":0,"base_model":%q,
		"lora_config":{"rank":4,"train_mlp":false,"train_attn":true,"train_unembed":true}}`, sess, base))
	cm, err := wire.DecodeCreateModelResponse(h.ok(keyA, id))
	require.NoError(t, err)
	var paths []string
	for i, ep := range []string{"save_weights", "save_weights_for_sampler"} {
		pr, err := wire.DecodePathResponse(h.ok(keyA, h.submit(keyA, ep, fmt.Sprintf(`{"model_id":%q,"path":"c%d","seq_id":%d}`, cm.ModelID, i, i+1))), true)
		require.NoError(t, err)
		paths = append(paths, pr.Path, "bt://loops:"+strings.TrimPrefix(pr.Path, "tinker://"))
	}
	want := wire.WeightsInfoResponse{BaseModel: base, IsLora: true, LoraRank: 4, TrainAttn: true, TrainUnembed: true}
	ask := func(h *harness, path string) wire.WeightsInfoResponse {
		var got wire.WeightsInfoResponse
		require.NoError(t, json.Unmarshal(h.post(keyA, "weights_info", fmt.Sprintf(`{"tinker_path":%q}`, path)), &got))
		return got
	}
	for _, p := range paths {
		assert.Equal(t, want, ask(h, p), p)
	}
	restarted := newServer()
	for _, p := range paths {
		assert.Equal(t, want, ask(restarted, p), "after a restart: %s", p)
	}

	for body, status := range map[string]int{
		`{"tinker_path":"tinker://nope/weights/c0"}`: http.StatusNotFound,
		`{"tinker_path":"s3://x"}`:                   http.StatusBadRequest,
		`{}`:                                         http.StatusBadRequest,
	} {
		got, out := h.call(keyA, http.MethodPost, "weights_info", body)
		assert.Equal(t, status, got, "%s: %s", body, out)
	}
	got, _ := h.call(keyB, http.MethodPost, "weights_info", fmt.Sprintf(`{"tinker_path":%q}`, paths[0]))
	assert.Equal(t, http.StatusNotFound, got, "another tenant's checkpoint is not found")

	// The test backend cannot read checkpoints: the live model answers.
	fake := newHarness(t, nil)
	fs := fake.session(keyA)
	model := fake.model(keyA, fs, 0)
	pr, err := wire.DecodePathResponse(fake.ok(keyA, fake.submit(keyA, "save_weights", fmt.Sprintf(`{"model_id":%q,"path":"a","seq_id":1}`, model))), true)
	require.NoError(t, err)
	assert.Equal(t, wire.WeightsInfoResponse{BaseModel: base, IsLora: true, LoraRank: 8, TrainAttn: true, TrainMLP: true, TrainUnembed: true},
		ask(fake, pr.Path))
}

// GET samplers/{id} says what a sampling session serves (the SDK's
// get_tokenizer and get_base_model read it).
func TestGetSampler(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	model, _, sid := h.openV1()
	get := func(key, path string) []byte {
		status, out := h.call(key, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status, "%s", out)
		return out
	}
	var got wire.GetSamplerResponse
	require.NoError(t, json.Unmarshal(get(keyA, "samplers/"+sid), &got))
	require.NotNil(t, got.ModelPath)
	assert.Equal(t, sid, got.SamplerID)
	assert.Equal(t, base, got.BaseModel)
	assert.Equal(t, "tinker://"+model+"/sampler_weights/v1", *got.ModelPath)

	ss, err := wire.DecodeCreateSamplingSessionResponse(h.post(keyA, "create_sampling_session",
		fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":0,"base_model":%q}`, h.session(keyA), base)))
	require.NoError(t, err)
	var plain map[string]any
	require.NoError(t, json.Unmarshal(get(keyA, "samplers/"+ss.SamplingSessionID), &plain))
	assert.Equal(t, map[string]any{"sampler_id": ss.SamplingSessionID, "base_model": base, "model_path": nil}, plain)

	status, _ := h.call(keyB, http.MethodGet, "samplers/"+sid, nil)
	assert.Equal(t, http.StatusNotFound, status, "another tenant's session")
	status, _ = h.call(keyA, http.MethodGet, "samplers/nope", nil)
	assert.Equal(t, http.StatusNotFound, status)
}

// The REST listings the SDK's RestClient has beyond runs:
// list_user_checkpoints (GET checkpoints, paginated), list_sessions and
// get_session — each key sees only its own.
func TestSessionsAndUserCheckpoints(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	get := func(key, path string, v any) {
		status, out := h.call(key, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status, "%s: %s", path, out)
		require.NoError(t, json.Unmarshal(out, v), "%s", out)
	}
	model, seq, sid := h.openV1()
	h.step(model, seq, 2)
	var sessions wire.ListSessionsResponse
	get(keyA, "sessions", &sessions)
	require.Len(t, sessions.Sessions, 1)
	var one wire.GetSessionResponse
	get(keyA, "sessions/"+sessions.Sessions[0], &one)
	assert.Equal(t, wire.GetSessionResponse{TrainingRunIDs: []string{model}, SamplerIDs: []string{sid}}, one)

	var all wire.CheckpointsListResponse
	get(keyA, "checkpoints", &all)
	require.NotNil(t, all.Cursor)
	assert.Equal(t, wire.Cursor{Offset: 0, Limit: 100, TotalCount: 2}, *all.Cursor)
	require.Len(t, all.Checkpoints, 2)
	assert.Equal(t, "tinker://"+model+"/sampler_weights/v1", all.Checkpoints[0].TinkerPath)
	var second wire.CheckpointsListResponse
	get(keyA, "checkpoints?limit=1&offset=1", &second)
	require.Len(t, second.Checkpoints, 1)
	assert.Equal(t, all.Checkpoints[1], second.Checkpoints[0])

	var other wire.ListSessionsResponse
	get(keyB, "sessions", &other)
	assert.Empty(t, other.Sessions, "another key's sessions are not listed")
	var none wire.CheckpointsListResponse
	get(keyB, "checkpoints", &none)
	assert.Empty(t, none.Checkpoints)
	status, _ := h.call(keyB, http.MethodGet, "sessions/"+sessions.Sessions[0], nil)
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = h.call(keyA, http.MethodGet, "checkpoints?limit=0", nil)
	assert.Equal(t, http.StatusBadRequest, status)
}
