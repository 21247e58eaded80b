package checkpoint

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// MinKeyLen is the shortest signing key a Signer accepts, in bytes.
const MinKeyLen = 16

// Signer makes and checks expiring HMAC-SHA256 signatures for download
// URLs. The signature covers a resource string (for checkpoint archives,
// the request path below the handler) and the expiry time in Unix seconds,
// so neither can be changed without invalidating it. A Signer is a value;
// it is safe for concurrent use. Its Key must be at least MinKeyLen bytes
// and must not be modified while in use.
type Signer struct {
	Key []byte
}

// Validate reports whether the key is long enough.
func (s Signer) Validate() error {
	if len(s.Key) < MinKeyLen {
		return fmt.Errorf("%w: %d bytes, at least %d needed", ErrWeakKey, len(s.Key), MinKeyLen)
	}
	return nil
}

func (s Signer) mac(resource string, expires int64) []byte {
	h := hmac.New(sha256.New, s.Key)
	h.Write([]byte("tandem-checkpoint-v1\n"))
	h.Write([]byte(resource))
	h.Write([]byte{'\n'})
	h.Write([]byte(strconv.FormatInt(expires, 10)))
	return h.Sum(nil)
}

// Sign returns the hex signature of resource valid until expires (to the
// second, rounded down).
func (s Signer) Sign(resource string, expires time.Time) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	return hex.EncodeToString(s.mac(resource, expires.Unix())), nil
}

// Verify checks that sig is the signature of resource with the given expiry
// (Unix seconds) and that now is not past it. It compares in constant time.
// A wrong signature (or a tampered resource or expiry) is ErrBadSignature;
// a right one past its time is ErrExpired.
func (s Signer) Verify(resource string, expires int64, sig string, now time.Time) error {
	if err := s.Validate(); err != nil {
		return err
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(resource, expires)) {
		return fmt.Errorf("%w for %s", ErrBadSignature, resource)
	}
	if now.Unix() > expires {
		return fmt.Errorf("%w: %s expired at %s", ErrExpired, resource, time.Unix(expires, 0).UTC().Format(time.RFC3339))
	}
	return nil
}
