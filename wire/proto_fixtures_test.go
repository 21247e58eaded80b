package wire

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/rl"
)

// The fixtures in testdata/proto were made by the official SDK v0.25.0
// (README.md there says how). Each NAME.pb has a NAME.json holding the
// same message in the JSON form, so the protobuf decoders are checked
// against the JSON decoders, which other fixtures pin to the SDK.

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "proto", name))
	require.NoError(t, err)
	return b
}

// canonicalFixture returns the deterministic serialization of NAME: the
// .det.pb file when the SDK's own order of map entries differs from it.
func canonicalFixture(t testing.TB, name string) []byte {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join("testdata", "proto", name+".det.pb")); err == nil {
		return b
	}
	return readFixture(t, name+".pb")
}

func TestProtoRequestFixtures(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"forward_backward.cross_entropy", "forward_backward.ppo",
		"forward.cross_entropy", "forward_backward.importance_sampling",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeForwardBackwardRequestProto(readFixture(t, name+".pb"))
			require.NoError(t, err)
			want, err := DecodeForwardBackwardRequest(readFixture(t, name+".json"), false)
			require.NoError(t, err)
			want.Forward = strings.HasPrefix(name, "forward.")
			assert.Equal(t, want, got)

			enc, err := got.MarshalProto()
			require.NoError(t, err)
			assert.Equal(t, canonicalFixture(t, name), enc, "re-encoding is not the SDK's deterministic bytes")
			if det, err := DecodeForwardBackwardRequestProto(canonicalFixture(t, name)); assert.NoError(t, err) {
				assert.Equal(t, got, det, "map order changed the value")
			}
		})
	}
}

func TestProtoRequestFixtureDetails(t *testing.T) {
	t.Parallel()
	fwd, err := DecodeForwardBackwardRequestProto(readFixture(t, "forward.cross_entropy.pb"))
	require.NoError(t, err)
	assert.True(t, fwd.Forward, "forward_only")
	assert.Nil(t, fwd.SeqID, "seq_id 0 means unset")

	ppo, err := DecodeForwardBackwardRequestProto(readFixture(t, "forward_backward.ppo.pb"))
	require.NoError(t, err)
	assert.False(t, ppo.Forward)
	require.NotNil(t, ppo.SeqID)
	assert.Equal(t, int64(7), *ppo.SeqID)
	assert.Equal(t, rl.Loss{Name: rl.PPO, Config: map[string]float64{rl.ClipLowThreshold: 0.8, rl.ClipHighThreshold: 1.2}}, ppo.Input.Loss)
	d := ppo.Input.Data[0]
	assert.Equal(t, []int{10, 11, 12, 13}, d.ModelInput.AllTokens())
	assert.Equal(t, rl.IntTensor([]int{11, 12, 13, 14}), d.LossFnInputs[rl.InputTargetTokens])
	assert.Equal(t, rl.FloatTensor([]float64{-0.5, -1.25, -2, -0.125}), d.LossFnInputs[rl.InputLogprobs])
	assert.Len(t, d.LossFnInputs, 4)
}

func TestProtoRequestFixturesRejected(t *testing.T) {
	t.Parallel()
	for name, field := range map[string]string{
		"reject.image_chunk": "data[0].model_input[1].image",
		"reject.sparse_csr":  "data[0].loss_fn_inputs.weights.sparse_csr",
	} {
		_, err := DecodeForwardBackwardRequestProto(readFixture(t, name+".pb"))
		var fe *FieldError
		require.True(t, errors.As(err, &fe), "%s: %v", name, err)
		assert.Equal(t, field, fe.Field, name)
		assert.Contains(t, fe.Problem, "not supported", name)
	}
}

func TestProtoSampleFixtures(t *testing.T) {
	t.Parallel()
	for name, canonical := range map[string]bool{"sample": true, "sample.topk_cache": false, "sample.topk_masked": true} {
		got, err := DecodeSampleResponseProto(readFixture(t, name+".pb"))
		require.NoError(t, err, name)
		want, err := DecodeSampleResponse(readFixture(t, name+".json"))
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
		if canonical { // sample.topk_cache has prompt_cache_hit_tokens, which SampleResponse does not hold
			enc, err := got.MarshalProto()
			require.NoError(t, err)
			assert.Equal(t, readFixture(t, name+".pb"), enc, name)
		}
	}
}

func TestProtoForwardBackwardOutputFixtures(t *testing.T) {
	t.Parallel()
	for name, canonical := range map[string]bool{
		"forward_backward_output":        true,
		"forward_backward_output.empty":  false, // the SDK reads no loss_fn_output_type as "ArrayRecord", which tandem writes
		"forward_backward_output.ragged": false, // int32 and bfloat16 come back as int64 and float32
	} {
		got, err := DecodeForwardBackwardOutputProto(readFixture(t, name+".pb"))
		require.NoError(t, err, name)
		want, err := DecodeForwardBackwardOutput(readFixture(t, name+".json"))
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
		enc, err := got.MarshalProto()
		require.NoError(t, err, name)
		if canonical {
			assert.Equal(t, readFixture(t, name+".pb"), enc, name)
		}
		back, err := DecodeForwardBackwardOutputProto(enc)
		require.NoError(t, err, name)
		assert.Equal(t, got, back, name)
	}
}

// TestProtoFixturePrefixes decodes every prefix of every fixture: each is
// either a message or a FieldError, never a panic.
func TestProtoFixturePrefixes(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "proto", "*.pb"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i := range b {
			for _, d := range protoDecoders {
				if err := d.decode(b[:i]); err != nil {
					var fe *FieldError
					require.True(t, errors.As(err, &fe), "%s[:%d] %s: %T %v", f, i, d.name, err, err)
					require.NotEmpty(t, fe.Field)
				}
			}
		}
	}
}
