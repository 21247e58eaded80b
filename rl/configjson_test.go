package rl

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// job is a struct that holds a Config, as a job file does.
type job struct {
	Name string `json:"name"`
	RL   Config `json:"rl"`
}

// strict decodes b as a job with unknown fields disallowed, as train does.
func strict(b string) (job, error) {
	var j job
	dec := json.NewDecoder(bytes.NewReader([]byte(b)))
	dec.DisallowUnknownFields()
	err := dec.Decode(&j)
	return j, err
}

func TestConfigJSONMovedKeysNameTheirPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, key, want string }{
		{`{"groups_per_batch":4,"correction":"tis"}`, "correction", `it moved to the algo config's "objective" (naive, ppo, tis, decoupled)`},
		{`{"loss":{"loss_fn":"cispo"}}`, "loss", `it moved to the algo config's "objective"`},
		{`{"kl_coef":0.5}`, "kl_coef", `it moved to the algo config's "kl_coef"`},
		{`{"KL_Coef":0.5}`, "KL_Coef", `it moved to the algo config's "kl_coef"`}, // encoding/json matches keys without regard to case
		// A moved key wins over an unknown one: the message that helps.
		{`{"max_stalenes":1,"correction":"none"}`, "correction", `it moved to the algo config's "objective"`},
	} {
		var c Config
		err := json.Unmarshal([]byte(tc.in), &c)
		moved, ok := errors.AsType[*MovedKeyError](err)
		require.True(t, ok, "%s: got %v, want a *MovedKeyError", tc.in, err)
		assert.Equal(t, tc.key, moved.Key, tc.in)
		assert.Contains(t, err.Error(), `rl: key "`+tc.key+`" is no longer read here; `+tc.want, tc.in)

		// Nested in a strict decoder, the error comes out unchanged.
		_, err = strict(`{"name":"x","rl":` + tc.in + `}`)
		_, ok = errors.AsType[*MovedKeyError](err)
		assert.True(t, ok, "%s nested: got %v", tc.in, err)
	}
}

// TestConfigJSONRejectsUnknownKeys: a misspelt key fails whether or not the
// caller's decoder disallows unknown fields (a json.Decoder's setting does
// not reach into a custom UnmarshalJSON, so Config enforces it itself).
func TestConfigJSONRejectsUnknownKeys(t *testing.T) {
	t.Parallel()
	var c Config
	err := json.Unmarshal([]byte(`{"group_size":2,"max_stalenes":1}`), &c)
	require.EqualError(t, err, `json: unknown field "max_stalenes"`)

	_, err = strict(`{"rl":{"group_size":2,"max_stalenes":1}}`)
	require.EqualError(t, err, `json: unknown field "max_stalenes"`)
	_, err = strict(`{"rl":{"sampling":{"max_tokenz":3}}}`)
	require.EqualError(t, err, `json: unknown field "max_tokenz"`, "nested objects are strict too")
	// The outer decoder's own strictness is untouched.
	_, err = strict(`{"nme":"x","rl":{}}`)
	require.EqualError(t, err, `json: unknown field "nme"`)
}

func TestConfigJSONDecodesOverDefaults(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	require.NoError(t, json.Unmarshal([]byte(`{"max_staleness":3,"substeps":0,"watchdog":5000000000}`), &c))
	want := DefaultConfig()
	want.MaxStaleness, want.Substeps, want.Watchdog = 3, 0, 5*time.Second
	assert.Equal(t, want, c, "present keys override, zeros included; absent keys keep their values")

	before := c
	require.NoError(t, json.Unmarshal([]byte(`null`), &c))
	assert.Equal(t, before, c, "null changes nothing")

	j, err := strict(`{"name":"x","rl":{"groups_per_batch":2,"group_size":3}}`)
	require.NoError(t, err)
	assert.Equal(t, Config{GroupsPerBatch: 2, GroupSize: 3}, j.RL)
}

// TestConfigJSONTypeErrors: type errors are encoding/json's, with the field
// path the outer decoder adds and the offset counted within the object.
func TestConfigJSONTypeErrors(t *testing.T) {
	t.Parallel()
	obj := `{"group_size": "two"}`
	_, err := strict(`{"name":"x","rl":` + obj + `}`)
	var typ *json.UnmarshalTypeError
	require.ErrorAs(t, err, &typ)
	assert.Equal(t, "rl.group_size", typ.Field)
	assert.Equal(t, "string", typ.Value)
	assert.Equal(t, int64(len(`{"group_size": "two"`)), typ.Offset, "the offset just past the bad value, within the object")

	_, err = strict(`{"rl":5}`)
	require.ErrorAs(t, err, &typ)
	assert.Equal(t, "rl", typ.Field)
	assert.Equal(t, "rl.Config", typ.Type.String(), "a non-object names Config, not a helper type")
}
