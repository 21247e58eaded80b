package ui

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, h http.Handler, target string, header ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Result(), string(b)
}

func TestRunsList(t *testing.T) {
	t.Parallel()
	h, _ := newFixtureHandler(t, Options{})
	resp, body := get(t, h, "/?format=json")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var rows []RunInfo
	require.NoError(t, json.Unmarshal([]byte(body), &rows))
	byName := map[string]RunInfo{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	require.Len(t, byName, len(fixtures))
	tests := []struct {
		name   string
		status Status
		steps  int
		bad    int
		best   *float64
	}{
		{"done", Finished, 40, 0, ptr(0.5)},
		{"live", Running, 12, 0, nil},
		{"crashed", Failed, 9, 0, nil},
		{"broke", Failed, 20, 0, nil},
		{"torn", Failed, 15, 1, nil},
		{"noisy", Finished, 30, 2, ptr(0.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := byName[tt.name]
			assert.Equal(t, tt.status, r.Status, r.StatusWhy)
			assert.Equal(t, tt.steps, r.Steps)
			assert.Equal(t, tt.bad, r.BadLines)
			assert.Equal(t, tt.best, r.BestAccuracy)
		})
	}
	assert.Equal(t, "naive", byName["broke"].Objective)
	_, page := get(t, h, "/")
	for _, f := range fixtures {
		assert.Contains(t, page, `href="/runs/`+f.name+`"`)
	}
}

func ptr(v float64) *float64 { return &v }

var circleRe = regexp.MustCompile(`<circle class="pt"`)

// chartPoints returns the <circle> count of each chart in page, by id.
func chartPoints(t *testing.T, page string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, part := range strings.Split(page, `<svg class="chart" id="chart-`)[1:] {
		id := part[:strings.IndexByte(part, '"')]
		svg := part[:strings.Index(part, "</svg>")]
		out[id] = len(circleRe.FindAllString(svg, -1))
		assert.Contains(t, svg, `data-points="`+itoa(out[id])+`"`, id)
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRunPageChartPoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps int
		evals int
	}{
		{"short", 40, 4},
		{"at-bound", MaxPoints, 2},
		{"long", 3*MaxPoints + 7, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			fixture{name: tt.name, steps: tt.steps, evalEvery: tt.steps / tt.evals, summary: "ok"}.write(t, root)
			h, err := New(root, Options{})
			require.NoError(t, err)
			resp, page := get(t, h, "/runs/"+tt.name)
			require.Equal(t, http.StatusOK, resp.StatusCode, page)
			per := min(tt.steps, MaxPoints) // points of one per-step series
			want := map[string]int{
				"reward": per, "accuracy": tt.evals, "staleness": 3 * per, "stale-trained": 2 * per,
				"versions": 2 * per, "samples": per, "tokens": per, "gap": per, "counts": 3 * per,
			}
			assert.Equal(t, want, chartPoints(t, page))
			assert.Contains(t, page, `id="step-counter">`+itoa(tt.steps)+`<`)
		})
	}
}

func TestDownsampleMeans(t *testing.T) {
	t.Parallel()
	xs, ys := make([]float64, 10), make([]float64, 10)
	for i := range xs {
		xs[i], ys[i] = float64(i), float64(2*i)
	}
	ox, oy := downsample(xs, ys, 4)
	require.Len(t, ox, 4)
	// Runs [0,2) [2,5) [5,7) [7,10): their means, computed naively.
	for b, r := range [][2]int{{0, 2}, {2, 5}, {5, 7}, {7, 10}} {
		var sx float64
		for i := r[0]; i < r[1]; i++ {
			sx += xs[i]
		}
		assert.InDelta(t, sx/float64(r[1]-r[0]), ox[b], 1e-12)
		assert.InDelta(t, 2*ox[b], oy[b], 1e-12)
	}
	same, _ := downsample(xs, ys, 10)
	assert.Len(t, same, 10)
}

func TestBadLinesShown(t *testing.T) {
	t.Parallel()
	h, _ := newFixtureHandler(t, Options{})
	tests := []struct {
		run   string
		lines []string
	}{
		{"torn", []string{"line 16 (truncated last line)"}},
		{"noisy", []string{"line 31:", "line 32:"}},
	}
	for _, tt := range tests {
		t.Run(tt.run, func(t *testing.T) {
			t.Parallel()
			resp, page := get(t, h, "/runs/"+tt.run)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, page, `<span id="bad-count">`+itoa(len(tt.lines))+`</span>`)
			for _, l := range tt.lines {
				assert.Contains(t, page, l)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	h, _ := newFixtureHandler(t, Options{})
	resp, page := get(t, h, "/compare?run=done&run=noisy")
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	pts := chartPoints(t, page)
	assert.Equal(t, 40+30, pts["reward"])
	assert.Equal(t, 4+2, pts["accuracy"])
	diff := page[strings.Index(page, `id="config-diff"`):]
	for _, key := range []string{"name", "rl.steps", "rl.adam.learning_rate"} {
		assert.Contains(t, diff, "<code>"+key+"</code>")
	}
	assert.NotContains(t, diff, "<code>algo.objective</code>", "same in both")

	resp, _ = get(t, h, "/compare?run=done")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestCheckpointsPage(t *testing.T) {
	t.Parallel()
	h, _ := newFixtureHandler(t, Options{})
	resp, page := get(t, h, "/runs/done/checkpoints")
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	assert.Equal(t, 1, strings.Count(page, `<tr class="ckpt">`))
	assert.Contains(t, page, "tinker://done/sampler_weights/final")
	assert.Contains(t, page, "adapter_model.safetensors")
	_, page = get(t, h, "/runs/live/checkpoints")
	assert.Contains(t, page, "No checkpoints")
}

func TestPathEscapesRefused(t *testing.T) {
	t.Parallel()
	h, _ := newFixtureHandler(t, Options{})
	tests := []string{
		"/runs/%2e%2e",
		"/runs/..%2f..%2fetc",
		"/runs/..%2F",
		"/runs/.hidden",
		"/runs/%2e%2e/checkpoints",
		"/runs/%2e%2e%2f%2e%2e/events",
		"/compare?run=done&run=../done",
		"/compare?run=done&run=%2e%2e",
		"/runs/a%5cb",
		"/runs/nope",
		"/runs/../../etc/passwd",
	}
	for _, target := range tests {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			resp, body := get(t, h, target)
			assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound, http.StatusMovedPermanently, http.StatusTemporaryRedirect}, resp.StatusCode, body)
			assert.NotContains(t, body, "reward_mean")
			if loc := resp.Header.Get("Location"); loc != "" {
				assert.False(t, strings.Contains(loc, ".."), loc)
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	h, _ := newFixtureHandler(t, Options{APIKey: "s3cret"})
	tests := []struct {
		name   string
		target string
		header []string
		code   int
	}{
		{"none", "/", nil, http.StatusUnauthorized},
		{"wrong", "/", []string{"X-API-Key", "nope"}, http.StatusUnauthorized},
		{"basic", "/", []string{"Authorization", "Basic abc"}, http.StatusUnauthorized},
		{"x-api-key", "/", []string{"X-API-Key", "s3cret"}, http.StatusOK},
		{"bearer", "/runs/done", []string{"Authorization", "Bearer s3cret"}, http.StatusOK},
		{"cookie", "/", []string{"Cookie", keyCookie + "=s3cret"}, http.StatusOK},
		{"query sets cookie", "/runs/done?api_key=s3cret", nil, http.StatusSeeOther},
		{"bad query", "/?api_key=nope", nil, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := get(t, h, tt.target, tt.header...)
			assert.Equal(t, tt.code, resp.StatusCode, body)
			if tt.code == http.StatusSeeOther {
				assert.Equal(t, "/runs/done", resp.Header.Get("Location"))
				assert.NotEmpty(t, resp.Cookies())
			}
		})
	}
}

func TestStaticEmbedded(t *testing.T) {
	t.Parallel()
	h, _ := newFixtureHandler(t, Options{})
	for _, f := range []string{"/static/app.js", "/static/style.css"} {
		resp, body := get(t, h, f)
		assert.Equal(t, http.StatusOK, resp.StatusCode, f)
		assert.NotContains(t, body, "https://", f)
	}
}
