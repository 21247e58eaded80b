package tinker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

// onWire is x as a client in c's mode receives it: protobuf carries
// log-probs as float32, JSON as float64.
func onWire(c *tinker.Client, x float64) float64 {
	if c.Mode() == tinker.ModeProto {
		return float64(float32(x))
	}
	return x
}

// exchange is one request a recorder saw, and its answer's Content-Type.
type exchange struct {
	contentType, accept, answerType string
	body                            []byte
}

// recorder records every exchange by endpoint.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]exchange
}

func newRecorder() *recorder { return &recorder{seen: map[string][]exchange{}} }

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		next.ServeHTTP(w, r)
		ep := strings.TrimPrefix(r.URL.Path, "/api/v1/")
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.seen[ep] = append(rec.seen[ep], exchange{
			contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept"),
			answerType: w.Header().Get("Content-Type"), body: b,
		})
	})
}

func (rec *recorder) get(ep string) []exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]exchange(nil), rec.seen[ep]...)
}

// answerTypes counts the Content-Types of the answers to ep.
func (rec *recorder) answerTypes(ep string) map[string]int {
	out := map[string]int{}
	for _, x := range rec.get(ep) {
		out[x.answerType]++
	}
	return out
}

// scriptResult is what runScript got back.
type scriptResult struct {
	fwd, fb, after rl.ForwardBackwardOutput
	step           rl.OptimStepOutput
	ref            policy.Ref
	sample         rl.SampleOutput
	calls          []string
}

// scriptData is the batch of runScript's first passes.
var scriptData = []rl.Datum{datum(1, 2, 3), datum(4, 5)}

// runScript drives a forward, a forward_backward, an optim_step, a
// forward at the new weights, a save for the sampler and a sample of the
// saved weights with prompt log-probs.
func runScript(t *testing.T, e *env) scriptResult {
	t.Helper()
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	fwd := tr.Forward(ctx, scriptData, ce)
	fb := tr.ForwardBackward(ctx, scriptData, ce)
	op := tr.OptimStep(ctx, rl.AdamParams{LearningRate: 0.25})
	after := tr.Forward(ctx, []rl.Datum{datum(4, 5)}, ce)
	save := tr.SaveForSampler(ctx, "s")
	var r scriptResult
	r.fwd, err = fwd.Wait(ctx)
	require.NoError(t, err)
	r.fb, err = fb.Wait(ctx)
	require.NoError(t, err)
	r.step, err = op.Wait(ctx)
	require.NoError(t, err)
	r.after, err = after.Wait(ctx)
	require.NoError(t, err)
	r.ref, err = save.Wait(ctx)
	require.NoError(t, err)
	smp := e.c.NewSampler(base)
	require.NoError(t, smp.Load(ctx, r.ref))
	seed := int64(3)
	r.sample, err = smp.Sample(ctx, rl.Tokens([]int{4, 5, 6}), 2, rl.SamplingParams{MaxTokens: 3, Seed: &seed, PromptLogprobs: true})
	require.NoError(t, err)
	r.calls = e.be.Trainer(tr.ModelID()).Calls()
	return r
}

// roundF32 rounds every float of o to float32, as protobuf carries it.
func roundF32(o rl.ForwardBackwardOutput) rl.ForwardBackwardOutput {
	out := rl.ForwardBackwardOutput{Metrics: o.Metrics}
	for _, m := range o.LossFnOutputs {
		r := map[string]rl.TensorData{}
		for k, v := range m {
			fs := make([]float64, len(v.Floats))
			for i, x := range v.Floats {
				fs[i] = float64(float32(x))
			}
			v.Floats = fs
			r[k] = v
		}
		out.LossFnOutputs = append(out.LossFnOutputs, r)
	}
	return out
}

// TestProtoRoundTrip: against tandem serve the client speaks protobuf
// (it answers client/config), and the same script gives the results JSON
// mode gives, but for log-probs rounded to float32 on the wire.
func TestProtoRoundTrip(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	pe := newEnv(t, rec.wrap, nil)
	require.Equal(t, tinker.ModeProto, pe.c.Mode())
	cfg, ok := pe.c.ServerConfig()
	require.True(t, ok)
	assert.Equal(t, int64(1024), cfg.FwdbwdMaxChunkLen)
	je := newEnv(t, nil, forceJSON)
	require.Equal(t, tinker.ModeJSON, je.c.Mode())
	_, ok = je.c.ServerConfig()
	assert.False(t, ok)

	p, j := runScript(t, pe), runScript(t, je)

	// theta is 0 before the step (and 0.25·5 after it, the fake trainer
	// moving it by the rate times the batch's 5 tokens).
	assert.InDelta(t, servertest.LogProb(0, 2), j.fwd.LossFnOutputs[0]["logprobs"].Floats[0], 1e-12)
	assert.Equal(t, roundF32(j.fwd), p.fwd)
	assert.Equal(t, roundF32(j.fb), p.fb)
	assert.Equal(t, roundF32(j.after), p.after)
	assert.Equal(t, j.step, p.step)
	assert.Equal(t, policy.Version(1), p.step.Version)
	assert.Equal(t, j.ref.Version, p.ref.Version)
	assert.Equal(t, j.ref.Kind, p.ref.Kind)
	assert.Equal(t, []string{"forward", "forward_backward", "optim_step", "forward", "save_sampler_weights"}, p.calls,
		"forward_only reached the trainer as a forward: no gradients touched")
	assert.Equal(t, j.calls, p.calls)

	// Samples: same tokens; log-probs rounded; the prompt's log-probs are
	// the trainer's forward log-probs of the same tokens, the first none.
	require.Len(t, p.sample.Sequences, 2)
	for i := range p.sample.Sequences {
		assert.Equal(t, j.sample.Sequences[i].Tokens, p.sample.Sequences[i].Tokens)
		assert.Equal(t, j.sample.Sequences[i].StopReason, p.sample.Sequences[i].StopReason)
		for k, x := range j.sample.Sequences[i].Logprobs {
			assert.Equal(t, float64(float32(x)), p.sample.Sequences[i].Logprobs[k])
		}
	}
	for _, r := range []scriptResult{j, p} {
		require.Len(t, r.sample.PromptLogprobs, 3)
		assert.Zero(t, r.sample.PromptLogprobs[0])
		assert.Equal(t, r.after.LossFnOutputs[0]["logprobs"].Floats, r.sample.PromptLogprobs[1:])
		assert.Equal(t, policy.Version(1), r.sample.Version)
	}

	// On the wire: forwards went to forward_backward in protobuf, their
	// results and the sample's came back in protobuf.
	assert.Empty(t, rec.get("forward"))
	fbs := rec.get("forward_backward")
	require.Len(t, fbs, 3)
	for i, x := range fbs {
		assert.Equal(t, wire.ContentTypeProto, x.contentType)
		req, err := wire.DecodeForwardBackwardRequestProto(x.body)
		require.NoError(t, err)
		assert.Equal(t, i != 1, req.Forward, "forward_only of call %d", i)
		require.NotNil(t, req.SeqID)
		assert.Equal(t, []int64{1, 2, 4}[i], *req.SeqID)
	}
	assert.Equal(t, 4, rec.answerTypes("retrieve_future")[wire.ContentTypeProto], "three passes and one sample in protobuf")
	for _, x := range rec.get("retrieve_future") {
		if x.answerType == wire.ContentTypeProto {
			assert.Contains(t, x.accept, wire.ContentTypeProto)
		}
	}
}

// TestProtoShapes: what the client sends toward a v0.25-era server.
func TestProtoShapes(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	e := newEnv(t, rec.wrap, nil)
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{}).Wait(ctx)
	require.NoError(t, err)

	cc := rec.get("client/config")
	require.Len(t, cc, 1)
	var body map[string]any
	require.NoError(t, json.Unmarshal(cc[0].body, &body))
	assert.Equal(t, map[string]any{"sdk_version": tinker.ProtoSDKVersion}, body)
	cs := rec.get("create_session")
	require.Len(t, cs, 1)
	require.NoError(t, json.Unmarshal(cs[0].body, &body))
	assert.Equal(t, tinker.ProtoSDKVersion, body["sdk_version"])
	for _, x := range rec.get("retrieve_future") {
		assert.Equal(t, "application/json", x.accept, "a create_model or optim_step result is JSON only, as in the SDK")
	}
}

// TestFallsBackToJSONWithoutClientConfig: a server that does not know
// client/config (404) is an older server, spoken to in JSON.
func TestFallsBackToJSONWithoutClientConfig(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	old := func(next http.Handler) http.Handler {
		return rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/client/config") {
				http.NotFound(w, r)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
	e := newEnv(t, old, nil)
	require.Equal(t, tinker.ModeJSON, e.c.Mode())
	_, ok := e.c.ServerConfig()
	assert.False(t, ok)
	r := runScript(t, e)
	assert.Equal(t, servertest.LogProb(0, 2), r.fwd.LossFnOutputs[0]["logprobs"].Floats[0], "float64 all the way")
	assert.Equal(t, r.after.LossFnOutputs[0]["logprobs"].Floats, r.sample.PromptLogprobs[1:])

	require.Len(t, rec.get("client/config"), 1)
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.get("create_session")[0].body, &body))
	assert.Equal(t, tinker.SDKVersion, body["sdk_version"])
	assert.Len(t, rec.get("forward"), 2, "forwards go to the v0.3.0 forward endpoint")
	for _, ep := range []string{"forward", "forward_backward"} {
		for _, x := range rec.get(ep) {
			assert.Equal(t, "application/json", x.contentType, ep)
		}
	}
	for _, x := range rec.get("retrieve_future") {
		assert.Equal(t, "application/json", x.accept)
		assert.NotEqual(t, wire.ContentTypeProto, x.answerType)
	}
}

// TestProtoModeReadsJSONAnswers: a server that answers client/config but
// answers polls in JSON (here tandem serve with the Accept rewritten) is
// still understood: each answer is decoded by its Content-Type.
func TestProtoModeReadsJSONAnswers(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	jsonPolls := func(next http.Handler) http.Handler {
		return rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/retrieve_future") {
				r.Header.Set("Accept", "application/json")
			}
			next.ServeHTTP(w, r)
		}))
	}
	e := newEnv(t, jsonPolls, nil)
	require.Equal(t, tinker.ModeProto, e.c.Mode())
	r := runScript(t, e)
	assert.Equal(t, servertest.LogProb(0, 2), r.fwd.LossFnOutputs[0]["logprobs"].Floats[0], "a JSON answer is not rounded")
	assert.Equal(t, servertest.LogProb(0.25*5, 6), r.after.LossFnOutputs[0]["logprobs"].Floats[1])
	assert.Equal(t, r.after.LossFnOutputs[0]["logprobs"].Floats, r.sample.PromptLogprobs[1:])
	assert.Len(t, rec.get("forward_backward"), 3, "requests still in protobuf")
	assert.Zero(t, rec.answerTypes("retrieve_future")[wire.ContentTypeProto])
}

// TestProtoChunking: in protobuf mode the server's fwdbwd_max_chunk_len
// bounds a request (the other keys missing from its answer take the SDK's
// defaults).
func TestProtoChunking(t *testing.T) {
	t.Parallel()
	const maxLen = 100
	small := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/client/config") {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"fwdbwd_max_chunk_len": 100}`))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	e := newEnv(t, small, nil)
	require.Equal(t, tinker.ModeProto, e.c.Mode())
	cfg, _ := e.c.ServerConfig()
	assert.Equal(t, int64(maxLen), cfg.FwdbwdMaxChunkLen)
	assert.Equal(t, int64(5_000_000), cfg.FwdbwdMaxChunkBytesCount, "the SDK's default")
	ctx := context.Background()
	tr, err := e.c.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	n := 2*maxLen + 5
	data := make([]rl.Datum, n)
	for i := range data {
		data[i] = datum(i % 500)
	}
	out, err := tr.ForwardBackward(ctx, data, ce).Wait(ctx)
	require.NoError(t, err)
	require.Len(t, out.LossFnOutputs, n)
	assert.InDelta(t, float64(n)*-servertest.LogProb(0, 0), out.Metrics["loss:sum"], 1e-6)
	assert.Len(t, e.srv.StepLog(tr.ModelID()), 3, "three chunks, three seq_ids")
}

// Top-k prompt log-probs reach the caller in both modes (JSON [id, lp]
// pairs; protobuf's dense matrices), the first position none.
func TestTopKPromptLogprobs(t *testing.T) {
	t.Parallel()
	for name, mod := range map[string]func(*tinker.Options){"proto": nil, "json": forceJSON} {
		e := newEnv(t, nil, mod)
		out, err := e.c.NewSampler(base).Sample(context.Background(), rl.Tokens([]int{4, 5, 6}), 1, rl.SamplingParams{MaxTokens: 1, TopKPromptLogprobs: 2})
		require.NoError(t, err, name)
		want := [][]rl.TokenLogprob{nil, {{Token: 0, Logprob: servertest.LogProb(0, 0)}, {Token: 1, Logprob: servertest.LogProb(0, 1)}}, nil}
		want[2] = want[1]
		require.Len(t, out.TopKPromptLogprobs, 3, name)
		assert.Nil(t, out.TopKPromptLogprobs[0], name)
		for i := 1; i < 3; i++ {
			require.Len(t, out.TopKPromptLogprobs[i], 2, name)
			for j, e := range out.TopKPromptLogprobs[i] {
				assert.Equal(t, want[i][j].Token, e.Token, name)
				assert.InDelta(t, want[i][j].Logprob, e.Logprob, 1e-6, name)
			}
		}
	}
}
