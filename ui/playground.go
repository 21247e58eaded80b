package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tandemrl/tandem/checkpoint"
)

// Playground bounds: what one POST /runs/{run}/sample may ask for.
const (
	MaxSampleTokens  = 256      // max_tokens
	MaxSampleN       = 8        // n
	MaxPromptBytes   = 2000     // prompt
	MaxTemperature   = 5.0      // temperature
	maxSampleBody    = 16 << 10 // request body
	sampleTimeoutDef = 2 * time.Minute
)

// Sampler completes prompts for the playground. The default,
// [EngineSampler], runs the embedded engine in process.
type Sampler interface {
	// Sample returns req.N completions of req.Prompt. An error matching
	// ErrBadSample is the request's fault (answered 400).
	Sample(ctx context.Context, req SampleRequest) ([]Completion, error)
}

// SampleRequest is one validated playground request.
type SampleRequest struct {
	// RunDir is the run folder, Config its config.json (nil when absent):
	// the sampler reads the run's base model from it.
	RunDir string
	Config map[string]any
	// Adapter is the checkpoint folder to serve, "" for the base alone;
	// Checkpoint its URI as the page named it.
	Adapter, Checkpoint string
	Prompt              string
	N, MaxTokens        int
	Temperature         float64
	Seed                int64
}

// Completion is one sampled continuation.
type Completion struct {
	Text       string  `json:"text"`
	Tokens     int     `json:"tokens"`
	Logprob    float64 `json:"logprob"` // summed over the completion's tokens
	StopReason string  `json:"stop_reason"`
}

// ErrBadSample marks a playground request the handler or sampler refuses:
// a bad field, an unknown checkpoint, a prompt the model cannot encode.
var ErrBadSample = errors.New("ui: bad sample request")

// sampleAnswer is the POST's JSON answer.
type sampleAnswer struct {
	Checkpoint  string       `json:"checkpoint"`
	Prompt      string       `json:"prompt"`
	Completions []Completion `json:"completions,omitempty"`
	Seconds     float64      `json:"seconds"`
	Error       string       `json:"error,omitempty"`
}

// serveSample answers POST /runs/{run}/sample: form fields checkpoint (a
// tinker:// URI of the run's store, empty for the base model), prompt,
// max_tokens, temperature, seed and n; JSON out. One sample runs at a time
// per handler; others wait for it or for their request to end.
func (h *Handler) serveSample(w http.ResponseWriter, r *http.Request) {
	if msg := crossSite(r); msg != "" {
		answerSample(w, http.StatusForbidden, sampleAnswer{Error: msg})
		return
	}
	name := r.PathValue("run")
	dir, err := runDir(h.root, name)
	if err != nil {
		h.fail(w, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSampleBody)
	if err := r.ParseForm(); err != nil {
		answerSample(w, http.StatusBadRequest, sampleAnswer{Error: fmt.Sprintf("form: %v (at most %d bytes)", err, maxSampleBody)})
		return
	}
	req, err := parseSampleForm(r.PostForm)
	if err != nil {
		answerSample(w, http.StatusBadRequest, sampleAnswer{Error: err.Error()})
		return
	}
	req.RunDir = dir
	if req.Adapter, err = checkpointDir(dir, req.Checkpoint); err != nil {
		answerSample(w, http.StatusBadRequest, sampleAnswer{Error: err.Error()})
		return
	}
	d, err := loadRun(dir, name, h.opts.Now(), h.opts.StaleAfter)
	if err != nil {
		h.fail(w, err)
		return
	}
	req.Config = d.config
	ans, code := h.sample(r.Context(), req)
	answerSample(w, code, ans)
}

// sample runs req under the handler's one-at-a-time bound and its timeout.
func (h *Handler) sample(ctx context.Context, req SampleRequest) (sampleAnswer, int) {
	ans := sampleAnswer{Checkpoint: req.Checkpoint, Prompt: req.Prompt}
	ctx, cancel := context.WithTimeout(ctx, h.opts.SampleTimeout)
	defer cancel()
	select {
	case h.sampling <- struct{}{}:
		defer func() { <-h.sampling }()
	case <-ctx.Done():
		ans.Error = "waiting for another sample: " + context.Cause(ctx).Error()
		return ans, http.StatusServiceUnavailable
	}
	t0 := time.Now()
	cs, err := h.opts.Sampler.Sample(ctx, req)
	ans.Seconds = time.Since(t0).Seconds()
	switch {
	case errors.Is(err, ErrBadSample):
		ans.Error = err.Error()
		return ans, http.StatusBadRequest
	case err != nil:
		ans.Error = err.Error()
		return ans, http.StatusInternalServerError
	}
	ans.Completions = cs
	return ans, http.StatusOK
}

// crossSite returns why r comes from another site's page ("" when it does
// not): a page elsewhere must not spend this machine's cores through a
// browser that can reach the loopback dashboard.
func crossSite(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return "cross-site sample requests are refused (Sec-Fetch-Site: " + site + ")"
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			return fmt.Sprintf("sample requests from origin %q are refused; open the dashboard at %s", o, r.Host)
		}
	}
	return ""
}

func answerSample(w http.ResponseWriter, code int, ans sampleAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(ans) // plain values always encode
}

// form is the part of url.Values parseSampleForm reads.
type form interface{ Get(string) string }

// parseSampleForm validates the playground's fields; an empty number field
// takes its default (max_tokens 24, temperature 1, seed 1, n 4).
func parseSampleForm(f form) (SampleRequest, error) {
	req := SampleRequest{Checkpoint: strings.TrimSpace(f.Get("checkpoint")), Prompt: f.Get("prompt")}
	var errs []error
	switch {
	case req.Prompt == "":
		errs = append(errs, errors.New("prompt is empty; write the text to complete"))
	case len(req.Prompt) > MaxPromptBytes:
		errs = append(errs, fmt.Errorf("prompt is %d bytes; at most %d", len(req.Prompt), MaxPromptBytes))
	case !utf8.ValidString(req.Prompt):
		errs = append(errs, errors.New("prompt is not valid UTF-8"))
	}
	var err error
	if req.MaxTokens, err = intField(f, "max_tokens", 24, 1, MaxSampleTokens); err != nil {
		errs = append(errs, err)
	}
	if req.N, err = intField(f, "n", 4, 1, MaxSampleN); err != nil {
		errs = append(errs, err)
	}
	if req.Temperature, err = floatField(f, "temperature", 1, 0, MaxTemperature); err != nil {
		errs = append(errs, err)
	}
	seed, err := intField(f, "seed", 1, 0, 1<<53)
	if err != nil {
		errs = append(errs, err)
	}
	req.Seed = int64(seed)
	if len(errs) > 0 {
		return req, fmt.Errorf("%w: %w", ErrBadSample, errors.Join(errs...))
	}
	return req, nil
}

func intField(f form, key string, def, lo, hi int) (int, error) {
	s := strings.TrimSpace(f.Get(key))
	if s == "" {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return def, fmt.Errorf("%s %q: want an integer in [%d, %d]", key, s, lo, hi)
	}
	return v, nil
}

func floatField(f form, key string, def, lo, hi float64) (float64, error) {
	s := strings.TrimSpace(f.Get(key))
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= lo && v <= hi) { // NaN fails both
		return def, fmt.Errorf("%s %q: want a number in [%g, %g]", key, s, lo, hi)
	}
	return v, nil
}

// checkpointDir resolves the playground's checkpoint field inside the run
// folder's store: "" is the base model (""), anything else must be a
// tinker:// URI whose run, kind and name are valid store names, so it
// cannot leave runDir/checkpoints.
func checkpointDir(runDir, uri string) (string, error) {
	if uri == "" {
		return "", nil
	}
	u, err := checkpoint.ParseURI(uri)
	if err != nil {
		return "", fmt.Errorf("%w: checkpoint: %w", ErrBadSample, err)
	}
	if u.Scheme != checkpoint.SchemeTinker {
		return "", fmt.Errorf("%w: checkpoint %q: want a tinker://<run>/<kind>/<name> URI from this run's checkpoints page", ErrBadSample, uri)
	}
	storeDir := filepath.Join(runDir, CheckpointsDir)
	if !fileExists(storeDir) {
		return "", fmt.Errorf("%w: checkpoint %q: this run folder has no checkpoints", ErrBadSample, uri)
	}
	st, err := checkpoint.Open(storeDir)
	if err != nil {
		return "", fmt.Errorf("ui: checkpoint store: %w", err)
	}
	ck, err := st.Get(u.Run, u.Kind, u.Name)
	if err != nil {
		return "", fmt.Errorf("%w: checkpoint %q: %w", ErrBadSample, uri, err)
	}
	if rel, err := filepath.Rel(storeDir, ck.Dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: checkpoint %q resolves outside the run's store", ErrBadSample, uri)
	}
	return ck.Dir, nil
}
