package openai

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

var greedy2 = rl.SamplingParams{MaxTokens: 2, Temperature: 1}

// The fault table of issue 15 for the vLLM dialect: each row a server
// misconfiguration or failure, the error the caller gets, and how often
// the request was tried.
func TestFaultTable(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, f *fakeVLLM, err error)
	var hungRetries int64
	rows := []struct {
		name   string
		setup  func(f *fakeVLLM) // before New
		inject func(f *fakeVLLM) // after New, before act
		opts   func(o *Options)
		act    func(s *Sampler) error
		check  check
	}{
		{
			name:  "404 on adapter routes: runtime loading disabled",
			setup: func(f *fakeVLLM) { f.runtimeDisabled = true },
			act:   func(s *Sampler) error { return s.Load(context.Background(), ref(1)) },
			check: func(t *testing.T, f *fakeVLLM, err error) {
				require.ErrorIs(t, err, ErrRuntimeLoRADisabled)
				assert.Contains(t, err.Error(), "--enable-lora")
				assert.Contains(t, err.Error(), "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True")
				var se *StatusError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, http.StatusNotFound, se.Status)
				assert.True(t, se.Detail)
				assert.Equal(t, 1, f.count("/v1/load_lora_adapter"), "not retried")
			},
		},
		{
			name:  "duplicate adapter name held by someone else",
			setup: func(f *fakeVLLM) { f.adapters["run-v000001"] = "/elsewhere" },
			act:   func(s *Sampler) error { return s.Load(context.Background(), ref(1)) },
			check: func(t *testing.T, f *fakeVLLM, err error) {
				require.ErrorIs(t, err, ErrAdapterExists)
				var se *StatusError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, http.StatusBadRequest, se.Status)
				assert.Equal(t, "InvalidUserInput", se.Type)
				assert.Contains(t, se.Message, "has already been loaded")
				assert.Equal(t, 1, f.count("/v1/load_lora_adapter"))
			},
		},
		{
			name:  "duplicate adapter name from our own lost answer: success",
			setup: func(f *fakeVLLM) { f.adapters["run-v000001"] = "/ckpt/run/v1" },
			act:   func(s *Sampler) error { return s.Load(context.Background(), ref(1)) },
			check: func(t *testing.T, f *fakeVLLM, err error) { require.NoError(t, err) },
		},
		{
			name:  "rank over the server's limit",
			setup: func(f *fakeVLLM) { f.ranks["/ckpt/run/v1"] = 64 },
			act:   func(s *Sampler) error { return s.Load(context.Background(), ref(1)) },
			check: func(t *testing.T, f *fakeVLLM, err error) {
				require.ErrorIs(t, err, ErrAdapterRank)
				assert.Contains(t, err.Error(), "--max-lora-rank")
				assert.Contains(t, err.Error(), "LoRA rank 64 is greater than max_lora_rank 16.")
				assert.Equal(t, 1, f.count("/v1/load_lora_adapter"), "a 500 on load is permanent")
			},
		},
		{
			name: "no adapter at the path: retried, then named",
			act: func(s *Sampler) error {
				return s.Load(context.Background(), policy.Ref{Run: "run", Version: 1, URI: "/missing"})
			},
			check: func(t *testing.T, f *fakeVLLM, err error) {
				require.ErrorIs(t, err, ErrAdapterNotFound)
				assert.Contains(t, err.Error(), "PathRewrite")
				assert.Equal(t, 4, f.count("/v1/load_lora_adapter"), "MaxRetries 3: four tries")
			},
		},
		{
			name:   "a replica that hangs: per-request timeout, retried, then a ConnError",
			inject: func(f *fakeVLLM) { f.hang = true },
			act: func(s *Sampler) error {
				// Only the hung calls run under this bound (a hung call never
				// answers, so any bound is right); New's calls did not.
				s.t.opts.RequestTimeout = 30 * time.Millisecond
				_, err := s.Sample(context.Background(), rl.Tokens([]int{1}), 1, greedy2)
				hungRetries = s.Stats().Retries
				return err
			},
			check: func(t *testing.T, f *fakeVLLM, err error) {
				var ce *ConnError
				require.ErrorAs(t, err, &ce)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "no answer within 30ms")
				// Counted by the client: under the short bound a busy
				// machine may end a try before the server sees it.
				assert.EqualValues(t, 3, hungRetries, "four tries: three retries")
			},
		},
		{
			name:   "503 twice, then an answer",
			inject: func(f *fakeVLLM) { f.faults = []int{503, 503} },
			act: func(s *Sampler) error {
				_, err := s.Sample(context.Background(), rl.Tokens([]int{1}), 1, greedy2)
				return err
			},
			check: func(t *testing.T, f *fakeVLLM, err error) {
				require.NoError(t, err)
				assert.Equal(t, 1+3, f.count("/v1/completions"))
			},
		},
		{
			name:   "400 is not retried and carries the server's message",
			inject: func(f *fakeVLLM) { f.faults = []int{400}; f.flatErrors = true },
			act: func(s *Sampler) error {
				_, err := s.Sample(context.Background(), rl.Tokens([]int{1}), 1, greedy2)
				return err
			},
			check: func(t *testing.T, f *fakeVLLM, err error) {
				var se *StatusError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, 400, se.Status)
				assert.Equal(t, "injected fault", se.Message, "flat envelope read")
				assert.Equal(t, 1+1, f.count("/v1/completions"))
			},
		},
		{
			name:   "aborted generation: retried on the same version",
			inject: func(f *fakeVLLM) { f.abortNext = 1 },
			act: func(s *Sampler) error {
				_, err := s.Sample(context.Background(), rl.Tokens([]int{1}), 1, greedy2)
				return err
			},
			check: func(t *testing.T, f *fakeVLLM, err error) {
				require.NoError(t, err)
				assert.Equal(t, 1+2, f.count("/v1/completions"))
			},
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeVLLM()
			if row.setup != nil {
				row.setup(f)
			}
			s, _ := newVLLMSampler(t, f, row.opts)
			if row.inject != nil {
				f.mu.Lock()
				row.inject(f)
				f.mu.Unlock()
			}
			row.check(t, f, row.act(s))
		})
	}
}

func TestRawLogprobsRefused(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	f.raw = true
	srv := startVLLM(t, f)
	w := &waits{}
	_, err := New(context.Background(), testOptions(srv.URL, VLLM, w))
	require.ErrorIs(t, err, ErrRawLogprobs)
	var le *LogprobsError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, []float64{-0.5, -0.6, -0.7}, le.Got)
	assert.Contains(t, err.Error(), "--logprobs-mode processed_logprobs")

	o := testOptions(srv.URL, VLLM, w)
	o.SkipLogprobsProbe = true
	s, err := New(context.Background(), o)
	require.NoError(t, err, "the probe is skippable")
	_, err = s.Sample(context.Background(), rl.Tokens([]int{1}), 1, greedy2)
	require.NoError(t, err)
}

func TestUnknownModelOnSample(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, nil)
	require.NoError(t, s.Load(context.Background(), ref(1)))
	f.mu.Lock()
	delete(f.adapters, "run-v000001") // the replica restarted
	f.mu.Unlock()
	_, err := s.Sample(context.Background(), rl.Tokens([]int{1}), 1, greedy2)
	require.ErrorIs(t, err, ErrModelNotServed)
	assert.Contains(t, err.Error(), "The model `run-v000001` does not exist.")
}

func TestRetryBackoffShape(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, w := newVLLMSampler(t, f, func(o *Options) { o.RetryInitial = time.Second; o.RetryMax = 3 * time.Second })
	w.take()
	f.mu.Lock()
	f.faults = []int{502, 503, 504}
	f.mu.Unlock()
	_, err := s.Sample(context.Background(), rl.Tokens([]int{1}), 1, greedy2)
	require.NoError(t, err)
	d := w.take()
	require.Len(t, d, 3)
	// Exponential with ±25 % jitter, capped by RetryMax (+ jitter).
	assert.InDelta(t, float64(time.Second), float64(d[0]), 0.26*float64(time.Second))
	assert.InDelta(t, float64(2*time.Second), float64(d[1]), 0.51*float64(time.Second))
	assert.LessOrEqual(t, d[2], time.Duration(1.25*float64(3*time.Second)))
	assert.EqualValues(t, 3, s.Stats().Retries)
}

func TestCancelledContextStopsRetries(t *testing.T) {
	t.Parallel()
	f := newFakeVLLM()
	s, _ := newVLLMSampler(t, f, nil)
	f.mu.Lock()
	f.hang = true
	f.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n0 := f.count("/v1/completions")
	_, err := s.Sample(ctx, rl.Tokens([]int{1}), 1, greedy2)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled))
	assert.LessOrEqual(t, f.count("/v1/completions"), n0+1)
}

func TestRetryRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status        int
		sample, admin bool
	}{
		{400, false, false}, {401, false, false}, {403, false, false}, {404, false, false}, {422, false, false},
		{408, true, true}, {429, true, true}, {500, true, false}, {502, true, true}, {503, true, true}, {504, true, true},
	} {
		err := error(&StatusError{Status: c.status})
		assert.Equal(t, c.sample, retrySample(err), "sample %d", c.status)
		assert.Equal(t, c.admin, retryAdmin(err), "admin %d", c.status)
	}
	ce := &ConnError{Err: errors.New("connection reset by peer")}
	assert.True(t, retrySample(ce))
	assert.True(t, retryAdmin(ce))
	assert.False(t, noRetry(ce))
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	o := Options{}.withDefaults()
	assert.Equal(t, 500*time.Millisecond, o.RetryInitial)
	assert.Equal(t, 10*time.Second, o.RetryMax)
	assert.Equal(t, 5*time.Minute, o.RetryMaxElapsed)
	assert.Equal(t, 8, o.MaxRetries)
	assert.Equal(t, 10*time.Minute, o.RequestTimeout)
	assert.Equal(t, 5*time.Minute, o.AdminTimeout)
	assert.Equal(t, 4, o.MaxLoadedVersions)
	assert.Equal(t, []int{0}, o.ProbePrompt)
	assert.Equal(t, "run-v000017", o.AdapterName(policy.Ref{Run: "run", Version: 17}))
	assert.Equal(t, "tandem-v000003", o.AdapterName(policy.Ref{Version: 3}))
	p, err := o.PathRewrite("/a")
	require.NoError(t, err)
	assert.Equal(t, "/a", p)
}
