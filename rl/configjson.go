package rl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// MovedKeyError is returned when JSON decoded into a Config sets a key that
// Config no longer reads: the algorithm's settings (objective, loss,
// off-policy correction, KL penalty) moved to the algorithm's own
// configuration, rl/algo's Config (a job file's "algo" object).
type MovedKeyError struct {
	// Key is the key as the JSON spelled it; To says where it moved.
	Key, To string
}

func (e *MovedKeyError) Error() string {
	return fmt.Sprintf("rl: key %q is no longer read here; it moved to %s", e.Key, e.To)
}

// movedKeys are the keys Config used to read, each with its new place, in
// the order they are looked for.
var movedKeys = []MovedKeyError{
	{Key: "correction", To: `the algo config's "objective" (naive, ppo, tis, decoupled)`},
	{Key: "loss", To: `the algo config's "objective" (naive, ppo, tis, decoupled), which chooses the trainer's loss`},
	{Key: "kl_coef", To: `the algo config's "kl_coef"`},
}

// UnmarshalJSON implements json.Unmarshaler. It decodes a JSON object over
// c: keys present override c's fields, absent keys leave them as they are,
// and null changes nothing. So that no setting is silently ignored, it
// rejects every key Config does not know, whether or not the caller's
// decoder disallows unknown fields: a key that moved to the algorithm's
// config (correction, loss, kl_coef, matched without regard to case, as
// encoding/json matches fields) fails with a *MovedKeyError, any other with
// encoding/json's `json: unknown field "…"` error. Type errors are
// encoding/json's *json.UnmarshalTypeError, with Offset counted from the
// start of this object.
func (c *Config) UnmarshalJSON(b []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		if typ, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			// Not an object: name the type the caller decodes into.
			return &json.UnmarshalTypeError{Value: typ.Value, Type: reflect.TypeFor[Config](), Offset: typ.Offset}
		}
		return err
	}
	for _, m := range movedKeys {
		for k := range keys {
			if strings.EqualFold(k, m.Key) {
				return &MovedKeyError{Key: k, To: m.To}
			}
		}
	}
	type fields Config // Config without this method
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode((*fields)(c))
}
