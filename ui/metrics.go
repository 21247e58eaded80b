package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// step is the part of one metrics.jsonl line (a runlog.Record) the
// dashboard draws. Fields it does not draw ("extra", "loss", …) are skipped
// by the decoder without being kept, so a 100,000-step run costs a few
// megabytes of these, not the file's size.
type step struct {
	Step          int         `json:"step"`
	Version       int64       `json:"version"`
	Seconds       float64     `json:"seconds"`
	Reward        float64     `json:"reward_mean"`
	Accuracy      *float64    `json:"accuracy,omitempty"`
	Staleness     map[int]int `json:"staleness"`
	MaxStaleness  int         `json:"max_staleness"`
	Dropped       int         `json:"dropped"`
	Requeued      int         `json:"requeued"`
	Filtered      int         `json:"filtered"`
	LogprobGap    float64     `json:"logprob_gap"`
	Samples       int         `json:"samples"`
	Tokens        int         `json:"tokens"`
	TokensPerSec  float64     `json:"tokens_per_s"`
	SamplesPerSec float64     `json:"samples_per_s"`
	ServedVersion int64       `json:"served_version"`
}

// meanStaleness is the mean staleness of the step's trained groups (0 when
// the histogram is empty).
func (s *step) meanStaleness() float64 {
	var sum, n float64
	for k, c := range s.Staleness {
		sum += float64(k * c)
		n += float64(c)
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// BadLine is a metrics.jsonl line the dashboard could not read.
type BadLine struct {
	Line      int    `json:"line"` // 1-based
	Err       string `json:"error"`
	Text      string `json:"text"`      // the line's start, at most maxBadText bytes
	Truncated bool   `json:"truncated"` // the file's last line, without its newline
}

// maxBadText bounds the text kept of a bad line.
const maxBadText = 200

// maxLine bounds one metrics line; a longer one is reported as bad.
const maxLine = 16 << 20

// metrics is a parsed metrics.jsonl.
type metrics struct {
	steps []step
	bad   []BadLine
	lines int // lines read, blank ones included
	// offset is the byte offset just past the last line consumed: a
	// trailing line without its newline is consumed only when it parses.
	offset   int64
	skipping bool // inside a line longer than maxLine
}

// errNoMetrics marks a run folder without a metrics.jsonl.
var errNoMetrics = errors.New("ui: no metrics.jsonl")

// readMetricsFile reads path. A missing file gives errNoMetrics; a bad line
// never fails the read, it is listed in bad.
func readMetricsFile(path string) (*metrics, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &metrics{}, errNoMetrics
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := &metrics{}
	if err := m.read(f); err != nil {
		return m, fmt.Errorf("ui: read %s: %w", path, err)
	}
	return m, nil
}

// read consumes r to its end, appending to m. Lines are decoded one by one
// from one reused buffer; cost is one decode per line.
func (m *metrics) read(r io.Reader) error {
	buf := make([]byte, 0, 256<<10)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow for a long line
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		rest := m.consume(buf, errors.Is(err, io.EOF))
		buf = buf[:copy(buf, rest)]
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// consume decodes every complete line in buf and returns what is left (the
// start of an unfinished line). With atEOF the rest is a final line without
// its newline: it counts when it parses, else it is a truncated bad line
// and the offset stays before it, so a tail picks it up once finished.
func (m *metrics) consume(buf []byte, atEOF bool) []byte {
	if m.skipping {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			m.offset += int64(len(buf))
			return buf[:0]
		}
		m.offset += int64(i + 1)
		buf, m.skipping = buf[i+1:], false
	}
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		m.line(buf[:i], false)
		m.offset += int64(i + 1)
		buf = buf[i+1:]
	}
	if len(buf) > maxLine {
		// A line longer than any record: report it and skip to its end.
		m.line(buf[:maxBadText], false)
		m.bad[len(m.bad)-1].Err = fmt.Sprintf("line longer than %d bytes", maxLine)
		m.offset += int64(len(buf))
		m.skipping = true
		return buf[:0]
	}
	if atEOF && len(bytes.TrimSpace(buf)) > 0 {
		if m.line(buf, true) {
			m.offset += int64(len(buf))
			return buf[:0]
		}
		m.lines-- // the line is not finished; it is counted again when it is
	}
	return buf
}

// line decodes one line; it reports whether the line was a good record.
func (m *metrics) line(b []byte, last bool) bool {
	m.lines++
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return true
	}
	var s step
	err := json.Unmarshal(b, &s)
	if err == nil {
		err = s.validate()
	}
	if err != nil {
		text := b
		if len(text) > maxBadText {
			text = text[:maxBadText]
		}
		m.bad = append(m.bad, BadLine{Line: m.lines, Err: err.Error(), Text: string(text), Truncated: last})
		return false
	}
	m.steps = append(m.steps, s)
	return true
}

// validate is runlog.Record.Validate's rule on the fields kept.
func (s *step) validate() error {
	for _, v := range []float64{s.Seconds, s.Reward, s.LogprobGap, s.TokensPerSec, s.SamplesPerSec} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("a number is not finite")
		}
	}
	if s.Step < 0 || s.Dropped < 0 || s.Requeued < 0 || s.Filtered < 0 || s.Samples < 0 || s.Tokens < 0 {
		return errors.New("step and counts must not be negative")
	}
	for k, n := range s.Staleness {
		if k < 0 || n < 0 {
			return fmt.Errorf("staleness entry %d:%d is negative", k, n)
		}
	}
	return nil
}
