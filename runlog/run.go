package runlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/tandemrl/tandem/internal/atomicfile"
)

// File names inside a run folder.
const (
	ConfigFile  = "config.json"
	MetricsFile = "metrics.jsonl"
	PlotsDir    = "plots"
)

// Run is an open run folder.
type Run struct {
	dir string

	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	records []Record
	closed  bool
}

// Open creates dir (and parents) and writes config as config.json. If the
// folder already holds a metrics.jsonl, its records are kept and new lines are
// appended (a resumed run continues its log).
func Open(dir string, config any) (*Run, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("runlog: create run folder: %w", err)
	}
	b, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("runlog: encode config: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, ConfigFile), append(b, '\n')); err != nil {
		return nil, fmt.Errorf("runlog: write config: %w", err)
	}
	path := filepath.Join(dir, MetricsFile)
	var prev []Record
	if _, err := os.Stat(path); err == nil {
		if prev, err = ReadMetricsFile(path); err != nil {
			return nil, fmt.Errorf("runlog: existing metrics: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("runlog: open metrics: %w", err)
	}
	return &Run{dir: dir, f: f, w: bufio.NewWriter(f), records: prev}, nil
}

// Dir returns the run folder.
func (r *Run) Dir() string { return r.dir }

// Log appends rec to metrics.jsonl and flushes it to the file.
func (r *Run) Log(rec Record) error {
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("runlog: step %d: %w", rec.Step, err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("runlog: encode step %d: %w", rec.Step, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("runlog: log after close")
	}
	r.w.Write(b)
	r.w.WriteByte('\n')
	if err := r.w.Flush(); err != nil {
		return fmt.Errorf("runlog: write step %d: %w", rec.Step, err)
	}
	r.records = append(r.records, rec)
	return nil
}

// Records returns a copy of every record logged so far (including those of
// an earlier run the folder held).
func (r *Run) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.records...)
}

// WriteJSON writes v as indented JSON to name inside the run folder, atomically.
func (r *Run) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("runlog: encode %s: %w", name, err)
	}
	return atomicfile.Write(filepath.Join(r.dir, name), append(b, '\n'))
}

// Close syncs and closes metrics.jsonl and renders the plots into
// plots/. It returns the first error met; the metrics are closed either way.
func (r *Run) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	err := r.w.Flush()
	if serr := r.f.Sync(); err == nil {
		err = serr
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	recs := append([]Record(nil), r.records...)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("runlog: close metrics: %w", err)
	}
	if len(recs) == 0 {
		return nil
	}
	if _, err := RenderPlots(filepath.Join(r.dir, PlotsDir), recs); err != nil {
		return fmt.Errorf("runlog: plots: %w", err)
	}
	return nil
}

// SetAccuracy records a held-out accuracy measured after the fact for the
// record of step, so the plots show it. metrics.jsonl is not rewritten; the
// caller keeps its evaluations elsewhere (e.g. a summary file). It reports
// whether such a record exists.
func (r *Run) SetAccuracy(step int, acc float64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.records) - 1; i >= 0; i-- {
		if r.records[i].Step == step {
			a := acc
			r.records[i].Accuracy = &a
			return true
		}
	}
	return false
}
