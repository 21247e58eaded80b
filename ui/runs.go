package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/runlog"
)

// Status is what a run folder says about its run.
type Status string

// The statuses, decided by [statusOf].
const (
	Running  Status = "running"
	Finished Status = "finished"
	Failed   Status = "failed"
)

// SummaryFile is the file `tandem train` writes when a run ends.
const SummaryFile = "summary.json"

// summary is the part of train.Summary the dashboard reads.
type summary struct {
	FinalAccuracy    float64 `json:"final_accuracy"`
	BaseAccuracy     float64 `json:"base_accuracy"`
	WallSeconds      float64 `json:"wall_seconds"`
	Steps            int     `json:"steps"`
	MaxStalenessSeen int     `json:"max_staleness_seen"`
	Error            string  `json:"error"`
	Evals            []struct {
		Step     int     `json:"step"`
		Version  int64   `json:"version"`
		Accuracy float64 `json:"accuracy"`
	} `json:"evals"`
}

// evalPoint is one held-out accuracy measurement.
type evalPoint struct {
	Step     int
	Accuracy float64
}

// RunInfo is one row of the runs list.
type RunInfo struct {
	Name          string    `json:"name"`
	Status        Status    `json:"status"`
	StatusWhy     string    `json:"status_why"`
	Steps         int       `json:"steps"`
	FinalAccuracy *float64  `json:"final_accuracy"`
	BestAccuracy  *float64  `json:"best_accuracy"`
	WallSeconds   float64   `json:"wall_seconds"`
	MaxStaleness  int       `json:"max_staleness"`
	Objective     string    `json:"objective"`
	BadLines      int       `json:"bad_lines"`
	Modified      time.Time `json:"modified"`
}

// runData is everything read from one run folder.
type runData struct {
	RunInfo
	dir     string
	config  map[string]any // config.json, nil when absent or unreadable
	cfgErr  string
	sum     *summary
	sumErr  string
	metrics *metrics
	evals   []evalPoint
}

// validRunName reports whether name can be a run folder's name in a URL:
// policy.ValidRunName's rule (letters, digits, '-', '_', '.', not starting
// with '.'), so "..", "a/b" and anything decoded from %2F are refused.
func validRunName(name string) error {
	if err := policy.ValidRunName(name); err != nil {
		return fmt.Errorf("%w: %v", ErrBadName, err)
	}
	return nil
}

// ErrBadName is returned for a run or checkpoint name that could leave the
// runs folder or is otherwise malformed.
var ErrBadName = errors.New("ui: bad name")

// ErrNoRun is returned for a run name with no folder.
var ErrNoRun = errors.New("ui: no such run")

// runDir returns root/name after checking name and that the folder exists
// and, resolved, stays inside root.
func runDir(root, name string) (string, error) {
	if err := validRunName(name); err != nil {
		return "", err
	}
	dir := filepath.Join(root, name)
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel != name {
		return "", fmt.Errorf("%w: %q", ErrBadName, name)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: %q", ErrNoRun, name)
	}
	return dir, nil
}

// listRuns returns the names of root's run folders (folders holding a
// config.json or a metrics.jsonl), sorted.
func listRuns(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("ui: list runs in %s: %w", root, err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() || validRunName(e.Name()) != nil {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if fileExists(filepath.Join(dir, runlog.ConfigFile)) || fileExists(filepath.Join(dir, runlog.MetricsFile)) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// loadRun reads the run folder dir named name. It fails only when the
// folder cannot be read at all; bad files are reported in the result.
func loadRun(dir, name string, now time.Time, staleAfter time.Duration) (*runData, error) {
	d := &runData{RunInfo: RunInfo{Name: name}, dir: dir}
	if b, err := os.ReadFile(filepath.Join(dir, runlog.ConfigFile)); err == nil {
		if err := json.Unmarshal(b, &d.config); err != nil {
			d.cfgErr = err.Error()
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		d.cfgErr = err.Error()
	}
	d.Objective = objectiveOf(d.config)
	sumBytes, sumReadErr := os.ReadFile(filepath.Join(dir, SummaryFile))
	if sumReadErr == nil {
		var s summary
		if err := json.Unmarshal(sumBytes, &s); err != nil {
			d.sumErr = err.Error()
		} else {
			d.sum = &s
		}
	}
	m, err := readMetricsFile(filepath.Join(dir, runlog.MetricsFile))
	if err != nil && !errors.Is(err, errNoMetrics) {
		return nil, err
	}
	d.metrics = m
	d.BadLines = len(m.bad)
	d.Modified = lastModified(dir)
	d.Status, d.StatusWhy = statusOf(sumReadErr == nil, d.sum, d.sumErr, configuredSteps(d.config), d.Modified, now, staleAfter)
	d.fill()
	return d, nil
}

// statusOf decides a run's status. The rule:
//
//   - summary.json present and readable: finished when it records no error
//     and holds at least one held-out evaluation (train.Run writes its
//     evaluations only when training succeeded) or its step count reaches
//     the configured rl.steps; otherwise failed (train.Run also writes a
//     summary, without evaluations, when the loop fails).
//   - summary.json present but not valid JSON: failed.
//   - no summary.json: running while metrics.jsonl (or config.json) was
//     modified within staleAfter of now, else failed (the process stopped
//     without writing its summary: killed, crashed).
func statusOf(hasSummary bool, s *summary, sumErr string, wantSteps int, modified, now time.Time, staleAfter time.Duration) (Status, string) {
	switch {
	case hasSummary && s == nil:
		return Failed, "summary.json is not valid JSON: " + sumErr
	case hasSummary && s.Error != "":
		return Failed, "summary.json records an error: " + s.Error
	case hasSummary && (len(s.Evals) > 0 || (wantSteps > 0 && s.Steps >= wantSteps)):
		return Finished, "summary.json written with evaluations"
	case hasSummary:
		return Failed, fmt.Sprintf("summary.json written after %d of %d steps, without evaluations", s.Steps, wantSteps)
	case now.Sub(modified) <= staleAfter:
		return Running, fmt.Sprintf("no summary.json; metrics written %s ago", now.Sub(modified).Round(time.Second))
	default:
		return Failed, fmt.Sprintf("no summary.json and no metrics for %s", now.Sub(modified).Round(time.Second))
	}
}

// lastModified is the newest modification time of the run's metrics.jsonl
// and config.json.
func lastModified(dir string) time.Time {
	var t time.Time
	for _, f := range []string{runlog.MetricsFile, runlog.ConfigFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil && st.ModTime().After(t) {
			t = st.ModTime()
		}
	}
	return t
}

// fill derives the list row's figures from the summary and the metrics.
func (d *runData) fill() {
	steps := d.metrics.steps
	d.Steps = len(steps)
	for i := range steps {
		d.MaxStaleness = max(d.MaxStaleness, steps[i].MaxStaleness)
		if a := steps[i].Accuracy; a != nil {
			d.evals = append(d.evals, evalPoint{Step: steps[i].Step + 1, Accuracy: *a})
		}
	}
	if len(steps) > 0 {
		d.WallSeconds = steps[len(steps)-1].Seconds
	}
	if s := d.sum; s != nil {
		if len(s.Evals) > 0 {
			d.evals = d.evals[:0]
			for _, e := range s.Evals {
				d.evals = append(d.evals, evalPoint{Step: e.Step, Accuracy: e.Accuracy})
			}
		}
		d.WallSeconds = max(d.WallSeconds, s.WallSeconds)
		d.MaxStaleness = max(d.MaxStaleness, s.MaxStalenessSeen)
		if d.Status == Finished {
			v := s.FinalAccuracy
			d.FinalAccuracy = &v
		}
	}
	if len(d.evals) > 0 {
		if d.FinalAccuracy == nil {
			v := d.evals[len(d.evals)-1].Accuracy
			d.FinalAccuracy = &v
		}
		best := d.evals[0].Accuracy
		for _, e := range d.evals {
			best = max(best, e.Accuracy)
		}
		d.BestAccuracy = &best
	}
}

// objectiveOf reads algo.objective from a config ("" when absent).
func objectiveOf(cfg map[string]any) string {
	if a, ok := cfg["algo"].(map[string]any); ok {
		if o, ok := a["objective"].(string); ok {
			return o
		}
	}
	return ""
}

// configuredSteps reads rl.steps from a config (0 when absent).
func configuredSteps(cfg map[string]any) int { return configuredInt(cfg, "steps") }

// configuredInt reads rl.<key> from a config (0 when absent).
func configuredInt(cfg map[string]any, key string) int {
	if r, ok := cfg["rl"].(map[string]any); ok {
		if n, ok := r[key].(float64); ok {
			return int(n)
		}
	}
	return 0
}

// flatten writes cfg's leaves into out under dotted keys ("rl.adam.eps");
// arrays and scalars are leaves, written as compact JSON.
func flatten(prefix string, v any, out map[string]string) {
	if m, ok := v.(map[string]any); ok && (len(m) > 0 || prefix == "") {
		for k, sub := range m {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, sub, out)
		}
		return
	}
	b, _ := json.Marshal(v)
	out[prefix] = string(b)
}

// DiffRow is one config key whose value differs between compared runs.
type DiffRow struct {
	Key    string
	Values []string // one per run, "—" where the key is absent
}

// configDiff returns the keys whose values differ among cfgs, sorted.
func configDiff(cfgs []map[string]any) []DiffRow {
	flat := make([]map[string]string, len(cfgs))
	keys := map[string]bool{}
	for i, c := range cfgs {
		flat[i] = map[string]string{}
		if c != nil {
			flatten("", c, flat[i])
		}
		for k := range flat[i] {
			keys[k] = true
		}
	}
	var rows []DiffRow
	for k := range keys {
		row := DiffRow{Key: k}
		same := true
		for i := range flat {
			v, ok := flat[i][k]
			if !ok {
				v = "—"
			}
			row.Values = append(row.Values, v)
			if v != row.Values[0] {
				same = false
			}
		}
		if !same {
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(a, b DiffRow) int { return strings.Compare(a.Key, b.Key) })
	return rows
}
