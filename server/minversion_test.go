package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

// step applies one forward_backward + optim_step and saves the result for
// samplers as "v<version>", returning its path.
func (h *harness) step(model string, seq *int, version int) string {
	h.t.Helper()
	h.ok(keyA, h.submit(keyA, "forward_backward", fwdBwd(model, *seq, 1, 2)))
	h.ok(keyA, h.submit(keyA, "optim_step", optim(model, *seq+1, 0.1)))
	id := h.submit(keyA, "save_weights_for_sampler", fmt.Sprintf(`{"model_id":%q,"path":"v%d","seq_id":%d}`, model, version, *seq+2))
	*seq += 3
	pr, err := wire.DecodePathResponse(h.ok(keyA, id), true)
	require.NoError(h.t, err)
	return pr.Path
}

func sampleBody(session string, seq int, min *int) string {
	extra := ""
	if min != nil {
		extra = fmt.Sprintf(`,"min_policy_version":%d`, *min)
	}
	return fmt.Sprintf(`{"sampling_session_id":%q,"seq_id":%d,"num_samples":1,"prompt":{"chunks":[{"tokens":[1,2]}]},"sampling_params":{"max_tokens":2,"seed":1}%s}`, session, seq, extra)
}

func servedVersion(t *testing.T, raw []byte) int64 {
	t.Helper()
	sr, err := wire.DecodeSampleResponse(raw)
	require.NoError(t, err)
	require.NotNil(t, sr.PolicyVersion)
	return *sr.PolicyVersion
}

// openV1 makes a model, publishes its version 1 for samplers and opens a
// sampling session bound to it.
func (h *harness) openV1() (model string, seq *int, sid string) {
	h.t.Helper()
	sess := h.session(keyA)
	model = h.model(keyA, sess, 0)
	seq = new(int)
	*seq = 1
	v1 := h.step(model, seq, 1)
	ss, err := wire.DecodeCreateSamplingSessionResponse(h.post(keyA, "create_sampling_session",
		fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":0,"model_path":%q}`, sess, v1)))
	require.NoError(h.t, err)
	return model, seq, ss.SamplingSessionID
}

// TestMinPolicyVersion covers the tandem extension: a session bound to
// version 1 answers a request for ≥ 2 from the newest published version of
// the same run, waits for one that is not published yet, and refuses a
// request the session can never meet.
func TestMinPolicyVersion(t *testing.T) {
	t.Parallel()
	// looked is told each time the server looks in the store for newer
	// versions. Every version this test asks for is or will be published,
	// so VersionWait is one no request reaches however slow the machine.
	looked := make(chan struct{}, 1)
	store := &servertest.Store{OnList: func(string, string) {
		select {
		case looked <- struct{}{}:
		default:
		}
	}}
	h := newHarnessWith(t, func(c *server.Config) { c.VersionWait = time.Hour }, func(o *server.Options) { o.Store = store })
	model, seq, sid := h.openV1()
	n := func(v int) *int { return &v }

	assert.Equal(t, int64(1), servedVersion(t, h.ok(keyA, h.submit(keyA, "asample", sampleBody(sid, 0, nil)))))
	assert.Equal(t, int64(1), servedVersion(t, h.ok(keyA, h.submit(keyA, "asample", sampleBody(sid, 1, n(1))))), "the session's version is new enough")

	h.step(model, seq, 2)
	h.step(model, seq, 3)
	assert.Equal(t, int64(3), servedVersion(t, h.ok(keyA, h.submit(keyA, "asample", sampleBody(sid, 2, n(2))))), "the newest version ≥ 2")
	assert.Equal(t, int64(1), servedVersion(t, h.ok(keyA, h.submit(keyA, "asample", sampleBody(sid, 3, nil)))), "without the field the session's version")

	// Version 4 is published while the request waits: once the server has
	// looked (and found at most version 3), and not before.
	select {
	case <-looked: // from an earlier request, all of which have finished
	default:
	}
	pending := h.submit(keyA, "asample", sampleBody(sid, 4, n(4)))
	<-looked
	h.step(model, seq, 4)
	assert.Equal(t, int64(4), servedVersion(t, h.ok(keyA, pending)))

	// The base model has only version 0.
	baseSess, err := wire.DecodeCreateSamplingSessionResponse(h.post(keyA, "create_sampling_session",
		fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":1,"base_model":%q}`, h.session(keyA), base)))
	require.NoError(t, err)
	status, body := h.call(keyA, http.MethodPost, "asample", sampleBody(baseSess.SamplingSessionID, 0, n(1)))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, string(body), "min_policy_version")

	status, body = h.call(keyA, http.MethodPost, "asample", sampleBody(sid, 6, n(-1)))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, string(body), "negative")

	// Baseten Loops' header is an alias of the field.
	hdr := "X-Min-Policy-Version"
	assert.Equal(t, int64(4), servedVersion(t, h.ok(keyA, h.submit(keyA, "asample", sampleBody(sid, 7, nil), hdr, "3"))), "the newest version ≥ 3")
	assert.Equal(t, int64(4), servedVersion(t, h.ok(keyA, h.submit(keyA, "asample", sampleBody(sid, 8, n(2)), hdr, "2"))), "header and field agree")
	for _, c := range []struct {
		min          *int
		header, says string
	}{
		{nil, "x", "X-Min-Policy-Version"}, {nil, "-1", "X-Min-Policy-Version"}, {n(1), "2", "min_policy_version is 1"},
	} {
		status, body = h.call(keyA, http.MethodPost, "asample", sampleBody(sid, 9, c.min), hdr, c.header)
		assert.Equal(t, http.StatusBadRequest, status, c.header)
		assert.Contains(t, string(body), c.says)
	}
}

// TestMinPolicyVersionNeverPublished: a request for a version the trainer
// never publishes fails, as a user error, once VersionWait has passed. No
// version 9 ever comes, so any VersionWait is the right one to expire.
func TestMinPolicyVersionNeverPublished(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, func(c *server.Config) { c.VersionWait = time.Millisecond }, func(o *server.Options) { o.Store = &servertest.Store{} })
	_, _, sid := h.openV1()
	nine := 9
	r := h.result(keyA, h.submit(keyA, "asample", sampleBody(sid, 0, &nine)))
	require.NotNil(t, r.Failed)
	assert.Contains(t, r.Failed.Error, "min_policy_version 9")
	assert.Contains(t, r.Failed.Error, "within 1ms")
	assert.Equal(t, wire.ErrorCategoryUser, r.Failed.Category)
}

// Baseten Loops names checkpoints bt://loops:<run>/…; the server takes
// them wherever it takes tinker:// paths.
func TestLoopsPaths(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sess := h.session(keyA)
	model := h.model(keyA, sess, 0)
	seq := 1
	v1 := h.step(model, &seq, 1)
	loops := "bt://loops:" + strings.TrimPrefix(v1, "tinker://")
	ss, err := wire.DecodeCreateSamplingSessionResponse(h.post(keyA, "create_sampling_session",
		fmt.Sprintf(`{"session_id":%q,"sampling_session_seq_id":0,"model_path":%q}`, sess, loops)))
	require.NoError(t, err)
	assert.Equal(t, int64(1), servedVersion(t, h.ok(keyA, h.submit(keyA, "asample", sampleBody(ss.SamplingSessionID, 0, nil)))))
	sr, err := wire.DecodeSampleResponse(h.ok(keyA, h.submit(keyA, "asample", fmt.Sprintf(
		`{"model_path":%q,"num_samples":1,"prompt":{"chunks":[{"tokens":[1,2]}]},"sampling_params":{"max_tokens":2,"seed":1}}`, loops))))
	require.NoError(t, err)
	require.NotNil(t, sr.PolicyVersion)
	assert.Equal(t, int64(1), *sr.PolicyVersion)
}
