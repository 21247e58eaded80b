package ui

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var batchRe = regexp.MustCompile(`<circle class="batch"[^>]*><title>step (\d+) trained on (\d+) group\(s\) of version (\d+) \(staleness (\d+)\)</title>`)

// timelineOf returns the run page's timeline SVG.
func timelineOf(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, `<svg class="chart timeline"`)
	require.GreaterOrEqual(t, i, 0, "no timeline")
	return page[i : i+strings.Index(page[i:], "</svg>")]
}

func TestTimelineMarksTrainedVersions(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const steps = 12
	fixture{name: "tl", steps: steps}.write(t, root)
	h, err := New(root, Options{})
	require.NoError(t, err)
	resp, page := get(t, h, "/runs/tl")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	svg := timelineOf(t, page)

	// The fixture's step i ends at version i+1, so its batch was trained
	// at version i and a group of staleness k came from version i−k.
	want := map[string]bool{}
	for i := range steps {
		r := record(i)
		for k, n := range r.Staleness {
			if n > 0 {
				want[fmt.Sprintf("%d %d %d %d", i, n, max(i-k, 0), k)] = true
			}
		}
	}
	got := map[string]bool{}
	for _, m := range batchRe.FindAllStringSubmatch(svg, -1) {
		got[strings.Join(m[1:], " ")] = true
	}
	assert.Equal(t, want, got)
	assert.Contains(t, svg, `data-name="trainer version"`)
	assert.Contains(t, svg, `data-name="served version"`, "no samples.jsonl: metrics' served_version")
	assert.Contains(t, page, "no samples.jsonl names replicas")
}

func TestTimelineReplicasFromSamples(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := fixture{name: "rep", steps: 6}.write(t, root)
	writeSamples(t, dir, 6, 4, 2)
	h, err := New(root, Options{})
	require.NoError(t, err)
	_, page := get(t, h, "/runs/rep")
	svg := timelineOf(t, page)
	for _, r := range []string{"r0", "r1"} {
		g := svg[strings.Index(svg, `data-name="served by `+r+`"`):]
		g = g[:strings.Index(g, "</g>")]
		// writeSamples: each replica serves versions s−1 and s in step s;
		// its line shows the newest.
		for s := range 6 {
			assert.Contains(t, g, fmt.Sprintf("step %d, version %d<", s, s), r)
		}
	}
	assert.NotContains(t, svg, `data-name="served version"`)
}

func TestRunPageZoom(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const steps = 3*MaxPoints + 7
	fixture{name: "z", steps: steps, evalEvery: 100, summary: "ok"}.write(t, root)
	h, err := New(root, Options{})
	require.NoError(t, err)
	tests := []struct {
		query        string
		reward, acc  int
		from, to     string
		wantStatusOK bool
	}{
		{"", MaxPoints, steps / 100, "", "", true},
		{"?from=100&to=299", 200, 2, "100", "299", true}, // evaluations after steps 100 and 200 count steps done: 199 and 299 → 200 and 300
		{"?from=1000", steps - 1000, 2, "1000", "", true},
		{"?to=9", 10, 0, "", "9", true},
		{"?from=5&to=4", 0, 0, "", "", false},
		{"?from=-1", 0, 0, "", "", false},
		{"?to=x", 0, 0, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			resp, page := get(t, h, "/runs/z"+tt.query)
			if !tt.wantStatusOK {
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
				return
			}
			require.Equal(t, http.StatusOK, resp.StatusCode, page)
			pts := chartPoints(t, page)
			assert.Equal(t, tt.reward, pts["reward"], "full resolution inside the range")
			assert.Equal(t, tt.acc, pts["accuracy"])
			assert.Contains(t, page, `id="zoom-from" name="from" type="number" min="0" value="`+tt.from+`"`)
			assert.Contains(t, page, `id="zoom-to" name="to" type="number" min="0" value="`+tt.to+`"`)
		})
	}
}
