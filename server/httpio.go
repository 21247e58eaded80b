package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/tandemrl/tandem/wire"
)

// apiError is an HTTP error answer: status and the ErrorResponse body.
type apiError struct {
	status int
	body   wire.ErrorResponse
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.status, e.body.Error) }

func userErr(status int, format string, args ...any) *apiError {
	return &apiError{status: status, body: wire.ErrorResponse{Error: fmt.Sprintf(format, args...), Category: wire.ErrorCategoryUser}}
}

func serverErr(status int, format string, args ...any) *apiError {
	return &apiError{status: status, body: wire.ErrorResponse{Error: fmt.Sprintf(format, args...), Category: wire.ErrorCategoryServer}}
}

// badRequest turns a decoding error into a 400 naming the field.
func badRequest(err error) *apiError {
	var fe *wire.FieldError
	if errors.As(err, &fe) {
		e := userErr(http.StatusBadRequest, "%s", fe.Error())
		e.body.Field = fe.Field
		return e
	}
	return userErr(http.StatusBadRequest, "%v", err)
}

func notFound(what, id string) *apiError {
	return userErr(http.StatusNotFound, "%s %q not found (unknown, expired, or not yours)", what, id)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(wire.ErrorResponse{Error: "encode answer: " + err.Error(), Category: wire.ErrorCategoryServer})
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeErr(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = serverErr(http.StatusInternalServerError, "%v", err)
	}
	if ae.status == http.StatusTooManyRequests || ae.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if ae.body.Category == wire.ErrorCategoryUser && ae.status < 500 &&
		ae.status != http.StatusTooManyRequests && ae.status != http.StatusRequestTimeout {
		// A user error never gets better by retrying; the SDK would retry a
		// 409 unless told not to.
		w.Header().Set("X-Should-Retry", "false")
	}
	writeJSON(w, ae.status, ae.body)
}

// readBody reads at most limit bytes of the request body.
// checkEncoding refuses, with a 415, a body this server cannot read: a
// Content-Type other than JSON (curl's default form type and text/plain
// are taken as JSON, as they carry it) or protobuf where protoOK, or a
// Content-Encoding (zstd is not offered: client/config says so).
func checkEncoding(r *http.Request, protoOK bool) error {
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return userErr(http.StatusUnsupportedMediaType, "Content-Encoding %q is not accepted here; send the body uncompressed", ce)
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return userErr(http.StatusUnsupportedMediaType, "Content-Type %q does not parse: %v; want application/json", ct, err)
	}
	switch mt {
	case "application/json", "text/plain", "application/x-www-form-urlencoded":
		return nil
	case wire.ContentTypeProto:
		if protoOK {
			return nil
		}
		return userErr(http.StatusUnsupportedMediaType, "Content-Type %q is not accepted for this call; want application/json (protobuf is read by forward and forward_backward)", mt)
	}
	return userErr(http.StatusUnsupportedMediaType, "Content-Type %q is not accepted here; want application/json", mt)
}

func readBody(r *http.Request, limit int64, protoOK bool) ([]byte, error) {
	if err := checkEncoding(r, protoOK); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, userErr(http.StatusBadRequest, "read body: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, userErr(http.StatusRequestEntityTooLarge, "body larger than %d bytes", limit)
	}
	return b, nil
}

// keyring checks API keys in constant time and maps each to its tenant id.
type keyring struct {
	keys   [][]byte
	owners []string
}

func newKeyring(keys []string) keyring {
	var k keyring
	for _, key := range keys {
		sum := sha256.Sum256([]byte(key))
		k.keys = append(k.keys, []byte(key))
		k.owners = append(k.owners, "key-"+hex.EncodeToString(sum[:8]))
	}
	return k
}

// owner returns the tenant of the request's key: X-API-Key, else
// Authorization: Bearer (or Api-Key).
func (k keyring) owner(r *http.Request) (string, error) {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		if auth := r.Header.Get("Authorization"); auth != "" {
			scheme, rest, _ := strings.Cut(auth, " ")
			// Bearer is Tinker's and Loops' clients' scheme; Api-Key is
			// the one Baseten Loops documents for direct callers.
			if !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "Api-Key") {
				return "", userErr(http.StatusUnauthorized, "Authorization scheme %q unsupported; want Bearer <key>, Api-Key <key> or an X-API-Key header", scheme)
			}
			key = strings.TrimSpace(rest)
		}
	}
	if key == "" {
		return "", userErr(http.StatusUnauthorized, "missing API key; send X-API-Key: <key> or Authorization: Bearer <key>")
	}
	found := -1
	for i, want := range k.keys {
		if subtle.ConstantTimeCompare([]byte(key), want) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", userErr(http.StatusUnauthorized, "API key not accepted")
	}
	return k.owners[found], nil
}
