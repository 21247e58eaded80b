package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server/localbackend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	baseName = "tiny"
	testKey  = "sk-test"
	context_ = 48
)

// fixture is a handler over a tiny engine model with the shipped
// character tokenizer, and the backend behind it for direct comparisons.
type fixture struct {
	h     *Handler
	be    *localbackend.Backend
	base  *engine.Model[float32]
	store *checkpoint.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := enginetest.Model(t, 2, context_, 7)
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	be, err := localbackend.New(localbackend.Options{Bases: map[string]*engine.Model[float32]{baseName: base}, Store: st, Seed: 1})
	require.NoError(t, err)
	tok, err := basemodel.Tokenizer()
	require.NoError(t, err)
	h, err := New(Options{
		Models:     []Model{{Name: baseName, MaxModelLen: base.Config.Context, VocabSize: base.Config.Vocab, Tokenizer: tok}},
		NewSampler: be.NewSampler, CheckKey: KeyChecker(testKey),
	})
	require.NoError(t, err)
	return &fixture{h: h, be: be, base: base, store: st}
}

// do sends a request with the test key and returns status and body.
func (f *fixture) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// post sends body and decodes a 200 answer into out.
func (f *fixture) post(t *testing.T, path string, body, out any) {
	t.Helper()
	code, b := f.do(t, http.MethodPost, path, body)
	require.Equal(t, http.StatusOK, code, "body: %s", b)
	require.NoError(t, json.Unmarshal(b, out), "body: %s", b)
}

// direct samples from a fresh backend sampler of the base, as the
// handler's own would.
func (f *fixture) direct(t *testing.T, prompt []int, n int, p rl.SamplingParams) rl.SampleOutput {
	t.Helper()
	s, err := f.be.NewSampler(context.Background(), baseName)
	require.NoError(t, err)
	out, err := s.Sample(context.Background(), rl.Tokens(prompt), n, p)
	require.NoError(t, err)
	return out
}

// trainedAdapter trains the base one step and saves the adapter as a PEFT
// folder.
func trainedAdapter(t *testing.T, base *engine.Model[float32]) string {
	t.Helper()
	tr, err := engine.NewTrainer(base, engine.LoraConfig{Rank: 4, TrainAttn: true, TrainMLP: true, Seed: 3}, engine.TrainerOptions{})
	require.NoError(t, err)
	ex := engine.Example{Input: []int{1, 2, 3, 4, 5, 6}, Targets: []int{2, 3, 4, 5, 6, 7}, Weights: []float64{1, 1, 1, 1, 1, 1}}
	_, err = tr.ForwardBackward(context.Background(), []engine.Example{ex}, engine.LossSpec{Name: engine.CrossEntropy})
	require.NoError(t, err)
	_, err = tr.OptimStep(engine.AdamParams{LearningRate: 0.05})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "adapter")
	require.NoError(t, engine.SaveAdapter(dir, tr.Adapter(), baseName))
	return dir
}

func i64(v int64) *int64 { return &v }
