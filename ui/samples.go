package ui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/tandemrl/tandem/runlog"
)

// Bounds of the samples page.
const (
	maxSampleLine = 1 << 20 // one samples.jsonl line; longer ones are bad
	maxSampleRows = 1000    // rollouts shown of one step
	maxBadShown   = 100     // bad lines listed (all are counted)
)

// stepCount is how many rollouts samples.jsonl holds for one step.
type stepCount struct {
	Step, N int
}

// replicaSpan is the newest version one replica served in one step's
// rollouts.
type replicaSpan struct {
	Step int
	Max  int64
}

// sampleLog is what one pass over samples.jsonl gathers.
type sampleLog struct {
	steps []stepCount     // ascending
	rows  []runlog.Sample // the wanted step's, at most maxSampleRows
	more  int             // the wanted step's rows beyond maxSampleRows
	bad   []BadLine       // at most maxBadShown
	nBad  int
	// served[replica] are the versions each replica's rollouts carried,
	// per step, in file order ("" names an unnamed sampler).
	served map[string][]replicaSpan
	// from is the byte offset the read started at (0: the whole file);
	// line numbers count from there.
	from int64
}

// maxSamplesScan bounds the bytes of samples.jsonl one samples page reads:
// a longer file is read from its last maxSamplesScan bytes (the latest
// steps), so a page costs at most that however long the run.
const maxSamplesScan = 64 << 20

// readSamplesFile reads path, keeping the rows of step want (-1: the last
// step's), from its last window bytes when it is longer (0: all of it). A
// missing file is an empty log.
func readSamplesFile(path string, want int, window int64) (*sampleLog, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &sampleLog{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ui: samples: %w", err)
	}
	defer f.Close()
	r, from, err := tailReader(f, window)
	if err != nil {
		return nil, fmt.Errorf("ui: read %s: %w", path, err)
	}
	l, err := scanSamples(r, want)
	l.from = from
	if err != nil {
		return l, fmt.Errorf("ui: read %s: %w", path, err)
	}
	return l, nil
}

// tailReader returns f from its start, or, when f is longer than window
// (> 0), from the first line that starts in its last window bytes, and
// the byte offset it starts at.
func tailReader(f *os.File, window int64) (io.Reader, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if window <= 0 || st.Size() <= window {
		return f, 0, nil
	}
	start := st.Size() - window - 1 // the byte before the window
	br := bufio.NewReader(io.NewSectionReader(f, start, window+1))
	skipped := int64(0) // the rest of the line cut at start, its newline included
	for {
		b, err := br.ReadSlice('\n')
		skipped += int64(len(b))
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		return br, start + skipped, nil
	}
}

// scanSamples reads r line by line. With want -1 it keeps the rows of the
// highest step seen, so the last step needs no second pass.
func scanSamples(r io.Reader, want int) (*sampleLog, error) {
	l := &sampleLog{served: map[string][]replicaSpan{}}
	counts := map[int]int{}
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, long, err := readLine(br)
		if len(bytes.TrimSpace(b)) > 0 || long {
			l.add(line, b, long, want, counts)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return l, err
		}
	}
	for s, n := range counts {
		l.steps = append(l.steps, stepCount{Step: s, N: n})
	}
	slices.SortFunc(l.steps, func(a, b stepCount) int { return a.Step - b.Step })
	return l, nil
}

// readLine returns the next line without its newline; a line longer than
// maxSampleLine is consumed and reported as long, its start returned.
func readLine(br *bufio.Reader) ([]byte, bool, error) {
	var line []byte
	for {
		b, err := br.ReadSlice('\n')
		if len(line)+len(b) > maxSampleLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return line[:min(len(line), maxBadText)], true, err
		}
		line = append(line, b...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte{'\n'}), false, err
	}
}

// add decodes one line into the log.
func (l *sampleLog) add(line int, b []byte, long bool, want int, counts map[int]int) {
	var s runlog.Sample
	err := fmt.Errorf("line longer than %d bytes", maxSampleLine)
	if !long {
		if err = json.Unmarshal(b, &s); err == nil {
			err = s.Validate()
		}
	}
	if err != nil {
		l.nBad++
		if len(l.bad) < maxBadShown {
			l.bad = append(l.bad, BadLine{Line: line, Err: err.Error(), Text: string(b[:min(len(b), maxBadText)])})
		}
		return
	}
	counts[s.Step]++
	l.serve(s)
	if want < 0 && (len(l.rows) == 0 || s.Step > l.rows[0].Step) {
		l.rows, l.more = l.rows[:0], 0
	}
	if (want < 0 && (len(l.rows) == 0 || s.Step == l.rows[0].Step)) || s.Step == want {
		if len(l.rows) < maxSampleRows {
			l.rows = append(l.rows, s)
		} else {
			l.more++
		}
	}
}

// serve records the version of s at its replica's span of s's step.
func (l *sampleLog) serve(s runlog.Sample) {
	spans := l.served[s.Replica]
	if n := len(spans); n > 0 && spans[n-1].Step == s.Step {
		spans[n-1].Max = max(spans[n-1].Max, s.Version)
		return
	}
	l.served[s.Replica] = append(spans, replicaSpan{Step: s.Step, Max: s.Version})
}

// samplesPage is the samples page's data.
type samplesPage struct {
	Name       string
	Step       int // -1 when the log is empty
	Prev, Next *int
	Steps      int // steps with rollouts
	Rows       []runlog.Sample
	More       int
	Bad        []BadLine
	NBad       int
	Mean       float64 // mean reward of Rows
	From       int64   // the byte offset the page read from (0: all)
}

// serveSamples answers GET /runs/{run}/samples[?step=N]: the rollouts of
// step N (default: the last step with any).
func (h *Handler) serveSamples(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("run")
	dir, err := runDir(h.root, name)
	if err != nil {
		h.fail(w, err)
		return
	}
	want := -1
	if s := r.URL.Query().Get("step"); s != "" {
		if want, err = strconv.Atoi(s); err != nil || want < 0 {
			http.Error(w, fmt.Sprintf("step %q: want a step number ≥ 0", s), http.StatusBadRequest)
			return
		}
	}
	l, err := readSamplesFile(filepath.Join(dir, runlog.SamplesFile), want, maxSamplesScan)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.render(w, "samples.tmpl", newSamplesPage(name, want, l))
}

func newSamplesPage(name string, want int, l *sampleLog) samplesPage {
	p := samplesPage{Name: name, Step: want, Steps: len(l.steps), Rows: l.rows, More: l.more, Bad: l.bad, NBad: l.nBad, From: l.from}
	if want < 0 && len(l.steps) > 0 {
		p.Step = l.steps[len(l.steps)-1].Step
	}
	i, _ := slices.BinarySearchFunc(l.steps, p.Step, func(c stepCount, s int) int { return c.Step - s })
	if i > 0 {
		p.Prev = &l.steps[i-1].Step
	}
	if i < len(l.steps) && l.steps[i].Step == p.Step {
		i++
	}
	if i < len(l.steps) {
		p.Next = &l.steps[i].Step
	}
	for _, s := range p.Rows {
		p.Mean += s.Reward / float64(len(p.Rows))
	}
	return p
}
