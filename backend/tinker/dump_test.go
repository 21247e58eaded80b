package tinker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// TestDumpForSDKValidation writes every request the client sends and every
// answer the server gives during a full round into $TANDEM_SDK_DUMP, for
// testdata/validate_sdk.py to check against the official SDK's pydantic
// classes. It is skipped unless that variable is set.
func TestDumpForSDKValidation(t *testing.T) {
	dir := os.Getenv("TANDEM_SDK_DUMP")
	if dir == "" {
		t.Skip("set TANDEM_SDK_DUMP to a folder to dump wire traffic")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var mu sync.Mutex
	n := 0
	futures := map[string]string{} // request id → endpoint
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			ep := strings.ReplaceAll(strings.TrimPrefix(r.URL.Path, "/api/v1/"), "/", "~")
			mu.Lock()
			defer mu.Unlock()
			n++
			base := filepath.Join(dir, fmt.Sprintf("%03d.%s", n, ep))
			if len(body) > 0 {
				_ = os.WriteFile(base+".request.json", body, 0o644)
			}
			_ = os.WriteFile(base+fmt.Sprintf(".response.%d.json", rec.Code), rec.Body.Bytes(), 0o644)
			if f, err := wire.DecodeUntypedAPIFuture(rec.Body.Bytes()); err == nil && ep != "retrieve_future" {
				futures[f.RequestID] = ep
			}
		})
	}
	e := newEnv(t, wrap, nil)
	ctx := context.Background()
	_, err := e.c.Capabilities(ctx)
	require.NoError(t, err)
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	ppo := datum(1, 2)
	ppo.LossFnInputs[rl.InputLogprobs] = rl.FloatTensor([]float64{-1, -2})
	ppo.LossFnInputs[rl.InputAdvantages] = rl.FloatTensor([]float64{0.5, -0.5})
	tr.ForwardBackward(ctx, []rl.Datum{ppo}, rl.Loss{Name: rl.PPO, Config: map[string]float64{"clip_low_threshold": 0.8}})
	tr.Forward(ctx, []rl.Datum{datum(1, 2)}, ce)
	tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1e-3})
	st, err := tr.SaveState(ctx, "ckpt").Wait(ctx)
	require.NoError(t, err)
	_, err = tr.LoadState(ctx, st, false).Wait(ctx)
	require.NoError(t, err)
	ref, err := tr.SaveForSampler(ctx, "s").Wait(ctx)
	require.NoError(t, err)
	smp := e.c.NewSampler(base)
	require.NoError(t, smp.Load(ctx, ref))
	_, err = smp.Sample(ctx, rl.Tokens([]int{1}), 2, rl.SamplingParams{MaxTokens: 2, StopStrings: []string{"\n"}})
	require.NoError(t, err)
	for _, p := range []string{"training_runs", "training_runs/" + tr.ModelID(), "training_runs/" + tr.ModelID() + "/checkpoints", "healthz"} {
		req, err := http.NewRequest(http.MethodGet, e.hs.URL+"/api/v1/"+p, nil)
		require.NoError(t, err)
		req.Header.Set("X-API-Key", apiKey)
		resp, err := e.hs.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	b, err := json.Marshal(futures)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "futures.json"), b, 0o644))
}
