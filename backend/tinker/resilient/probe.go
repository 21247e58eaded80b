package resilient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tandemrl/tandem/backend/tinker"
)

// isNotFound reports a 404 answer, which may mean the server restarted
// (it no longer knows the model, session or future) or that the call named
// something that does not exist (a checkpoint): probe tells them apart.
func isNotFound(err error) bool {
	var se *tinker.StatusError
	return errors.As(err, &se) && se.Status == http.StatusNotFound
}

// known asks the server whether it still knows what body names: POST
// endpoint answered 200 means yes. Any other answer, or none, means no.
func known(ctx context.Context, o tinker.Options, endpoint string, body any) bool {
	base, key := o.BaseURL, o.APIKey
	if base == "" {
		base = os.Getenv(tinker.EnvBaseURL)
	}
	if key == "" {
		key = os.Getenv(tinker.EnvAPIKey)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/api/v1/"+endpoint, bytes.NewReader(b))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	client := o.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
