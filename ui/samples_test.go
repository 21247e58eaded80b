package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/runlog"
)

// writeSamples logs groups×size rollouts per step for steps [0, steps)
// into dir/samples.jsonl and returns them: group g is served by replica
// r<g%2>, with staleness 1 for the first two groups and 0 for the rest, so
// each replica serves an older version before the newest in every step.
func writeSamples(t testing.TB, dir string, steps, groups, size int) []runlog.Sample {
	t.Helper()
	l, err := runlog.OpenSamples(dir)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	var all []runlog.Sample
	for s := range steps {
		var batch []runlog.Sample
		for g := range groups {
			for i := range size {
				stale := 0
				if g < 2 {
					stale = 1
				}
				batch = append(batch, runlog.Sample{Step: s, Group: g, Prompt: fmt.Sprintf("What is %d + %d?", s, g),
					Completion: fmt.Sprintf(" %d <%d>", s+g+i, i), Reward: float64(i) / float64(size), Version: int64(max(s-stale, 0)),
					Staleness: stale, Replica: fmt.Sprintf("r%d", g%2)})
			}
		}
		require.NoError(t, l.Log(batch))
		all = append(all, batch...)
	}
	return all
}

func TestSamplesPage(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := fixture{name: "s", steps: 5}.write(t, root)
	all := writeSamples(t, dir, 5, 3, 2)
	f, err := os.OpenFile(filepath.Join(dir, runlog.SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("{\"step\":2,\"reward\":\"x\"}\nnot json\n{\"step\":1,\"reward\":1e999}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	h, err := New(root, Options{})
	require.NoError(t, err)

	tests := []struct {
		target     string
		step       int
		prev, next string
	}{
		{"/runs/s/samples", 4, "step=3", ""},
		{"/runs/s/samples?step=2", 2, "step=1", "step=3"},
		{"/runs/s/samples?step=0", 0, "", "step=1"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			t.Parallel()
			resp, page := get(t, h, tt.target)
			require.Equal(t, http.StatusOK, resp.StatusCode, page)
			assert.Contains(t, page, `id="sample-step">`+itoa(tt.step)+`<`)
			var want []runlog.Sample
			for _, s := range all {
				if s.Step == tt.step {
					want = append(want, s)
				}
			}
			assert.Equal(t, len(want), strings.Count(page, `<tr class="sample"`))
			for _, s := range want {
				assert.Contains(t, page, "<pre>"+template.HTMLEscapeString(s.Completion)+"</pre>", "completions are escaped")
			}
			assert.Contains(t, page, "Unreadable samples lines: 3")
			for _, l := range []string{"line 31:", "line 32:", "line 33:"} {
				assert.Contains(t, page, l)
			}
			if tt.prev != "" {
				assert.Contains(t, page, `id="prev-step" href="/runs/s/samples?`+tt.prev+`"`)
			} else {
				assert.NotContains(t, page, `id="prev-step"`)
			}
			if tt.next != "" {
				assert.Contains(t, page, `id="next-step" href="/runs/s/samples?`+tt.next+`"`)
			} else {
				assert.NotContains(t, page, `id="next-step"`)
			}
		})
	}
	resp, _ := get(t, h, "/runs/s/samples?step=-1")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, _ = get(t, h, "/runs/%2e%2e/samples")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestSamplesPageWithoutSamples(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fixture{name: "bare", steps: 3}.write(t, root)
	h, err := New(root, Options{})
	require.NoError(t, err)
	resp, page := get(t, h, "/runs/bare/samples")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, page, `id="no-samples"`)
}

func TestSamplesLongLineSkipped(t *testing.T) {
	t.Parallel()
	long := `{"step":0,"prompt":"` + strings.Repeat("x", maxSampleLine) + "\"}\n"
	good := `{"step":0,"prompt":"p","completion":"c","reward":1}` + "\n"
	l, err := scanSamples(strings.NewReader(good+long+good), -1)
	require.NoError(t, err)
	assert.Len(t, l.rows, 2)
	require.Equal(t, 1, l.nBad)
	assert.Equal(t, 2, l.bad[0].Line)
	assert.Contains(t, l.bad[0].Err, "longer than")
}

func FuzzScanSamples(f *testing.F) {
	f.Add([]byte(`{"step":0,"prompt":"p","completion":"c","reward":1}`+"\n"+`{"step":1,"reward":0.5}`), -1)
	f.Add([]byte("not json\n\n{\"step\":-1}\n{\"reward\":1e999}"), 0)
	f.Fuzz(func(t *testing.T, data []byte, want int) {
		l, err := scanSamples(bytes.NewReader(data), want)
		require.NoError(t, err)
		// Every kept row is a valid sample of the wanted step (or all of
		// one step), and the step counts cover the rows.
		total := 0
		for _, c := range l.steps {
			total += c.N
		}
		require.LessOrEqual(t, len(l.rows), total)
		for _, s := range l.rows {
			require.NoError(t, s.Validate())
			require.Equal(t, l.rows[0].Step, s.Step)
			if want >= 0 {
				require.Equal(t, want, s.Step)
			}
		}
		require.LessOrEqual(t, len(l.bad), l.nBad)
	})
}

// tailReader starts at the first line that starts inside the window,
// checked against a naive search for every window size.
func TestTailReaderStartsAtALine(t *testing.T) {
	t.Parallel()
	content := "a\nbb\n\nccc\n" + strings.Repeat("d", 100<<10) + "\nee" // a line longer than bufio's buffer, and a last one without newline
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	size := int64(len(content))
	for _, window := range []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 100, 100 << 10, size - 1, size, size + 5} {
		want := int64(0)
		if window > 0 && window < size {
			want = size // naive: the first line start at or after size−window
			for i := size - window; i < size; i++ {
				if i == 0 || content[i-1] == '\n' {
					want = i
					break
				}
			}
		}
		r, from, err := tailReader(f, window)
		require.NoError(t, err)
		assert.Equal(t, want, from, "window %d", window)
		rest, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.Equal(t, content[want:], string(rest), "window %d", window)
		_, err = f.Seek(0, io.SeekStart)
		require.NoError(t, err)
	}
}

func TestSamplesPageReadsTheTailOfALongFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	all := writeSamples(t, dir, 6, 2, 2)
	path := filepath.Join(dir, runlog.SamplesFile)
	st, err := os.Stat(path)
	require.NoError(t, err)
	l, err := readSamplesFile(path, -1, st.Size()/3)
	require.NoError(t, err)
	assert.Positive(t, l.from)
	require.NotEmpty(t, l.rows)
	assert.Equal(t, 5, l.rows[0].Step, "the last step")
	assert.Equal(t, all[len(all)-len(l.rows):], l.rows)
	assert.Less(t, len(l.steps), 6, "earlier steps are not read")
	assert.Zero(t, l.nBad, "the cut line is skipped, not reported")
}
