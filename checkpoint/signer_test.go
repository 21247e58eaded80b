package checkpoint

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testKey = []byte("0123456789abcdef-test-key")

func TestSignerMatchesHMACReference(t *testing.T) {
	t.Parallel()
	s := Signer{Key: testKey}
	exp := t0.Add(time.Hour)
	sig, err := s.Sign("/r/weights/x.tar", exp)
	require.NoError(t, err)
	// Reference: HMAC-SHA256 over the documented message.
	h := hmac.New(sha256.New, testKey)
	h.Write([]byte("tandem-checkpoint-v1\n/r/weights/x.tar\n" + strconv.FormatInt(exp.Unix(), 10)))
	assert.Equal(t, hex.EncodeToString(h.Sum(nil)), sig)
}

func TestSignerVerify(t *testing.T) {
	t.Parallel()
	s := Signer{Key: testKey}
	exp := t0.Add(time.Hour)
	res := "/r/sampler_weights/x.tar.gz"
	sig, err := s.Sign(res, exp)
	require.NoError(t, err)
	flip := func(sig string) string {
		b := []byte(sig)
		b[0] = map[bool]byte{true: 'b', false: 'a'}[b[0] == 'a']
		return string(b)
	}
	tests := []struct {
		name    string
		res     string
		expires int64
		sig     string
		now     time.Time
		want    error
	}{
		{"valid", res, exp.Unix(), sig, t0, nil},
		{"valid at the last second", res, exp.Unix(), sig, exp, nil},
		{"expired a second later", res, exp.Unix(), sig, exp.Add(time.Second), ErrExpired},
		{"tampered expiry", res, exp.Unix() + 3600, sig, t0, ErrBadSignature},
		{"tampered resource", "/r/sampler_weights/y.tar.gz", exp.Unix(), sig, t0, ErrBadSignature},
		{"format swapped", "/r/sampler_weights/x.tar", exp.Unix(), sig, t0, ErrBadSignature},
		{"flipped signature", res, exp.Unix(), flip(sig), t0, ErrBadSignature},
		{"truncated signature", res, exp.Unix(), sig[:63], t0, ErrBadSignature},
		{"uppercase signature", res, exp.Unix(), strings.ToUpper(sig), t0, nil},
		{"not hex", res, exp.Unix(), "zz", t0, ErrBadSignature},
		{"empty", res, exp.Unix(), "", t0, ErrBadSignature},
	}
	for _, tc := range tests {
		err := s.Verify(tc.res, tc.expires, tc.sig, tc.now)
		if tc.want == nil {
			assert.NoError(t, err, tc.name)
		} else {
			assert.ErrorIs(t, err, tc.want, tc.name)
		}
	}
	other := Signer{Key: []byte("another key of sixteen+ bytes")}
	assert.ErrorIs(t, other.Verify(res, exp.Unix(), sig, t0), ErrBadSignature, "another key")
}

func TestSignerRefusesWeakKey(t *testing.T) {
	t.Parallel()
	for _, key := range [][]byte{nil, []byte("short")} {
		s := Signer{Key: key}
		_, err := s.Sign("/x", t0)
		assert.ErrorIs(t, err, ErrWeakKey)
		assert.ErrorIs(t, s.Verify("/x", t0.Unix(), "00", t0), ErrWeakKey)
	}
}
