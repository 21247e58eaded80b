package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/runlog"
)

// maxCompare bounds the runs one compare page overlays.
const maxCompare = 8

func parseTemplates() (*template.Template, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"acc": func(p *float64) string {
			if p == nil {
				return "—"
			}
			return strconv.FormatFloat(*p, 'f', 3, 64)
		},
		"secs":      func(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) },
		"maxPoints": func() int { return MaxPoints },
		"add":       func(a, b int) int { return a + b },
		"maxPrompt": func() int { return MaxPromptBytes },
		"maxTokens": func() int { return MaxSampleTokens },
		"maxN":      func() int { return MaxSampleN },
		"json": func(v any) (string, error) {
			b, err := json.MarshalIndent(v, "", "  ")
			return string(b), err
		},
	}).ParseFS(assets, "assets/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("ui: templates: %w", err)
	}
	return t, nil
}

// render executes the named template; a failure after the first byte can
// only be logged into the page, so templates are kept simple.
func (h *Handler) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := h.tmpl.ExecuteTemplate(w, name, data); err != nil {
		fmt.Fprintf(w, "<p class=bad>page error: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}

// listRows loads every run of the folder; a run that cannot be read at all
// is skipped (a row needs at least its folder).
func (h *Handler) listRows() ([]RunInfo, error) {
	names, err := listRuns(h.root)
	if err != nil {
		return nil, err
	}
	rows := make([]RunInfo, 0, len(names))
	now := h.opts.Now()
	for _, name := range names {
		d, err := loadRun(filepath.Join(h.root, name), name, now, h.opts.StaleAfter)
		if err != nil {
			continue
		}
		rows = append(rows, d.RunInfo)
	}
	return rows, nil
}

func (h *Handler) serveList(w http.ResponseWriter, r *http.Request) {
	rows, err := h.listRows()
	if err != nil {
		h.fail(w, err)
		return
	}
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(rows)
		return
	}
	h.render(w, "list.tmpl", map[string]any{"Root": h.root, "Runs": rows})
}

// runPage is the run page's data.
type runPage struct {
	*runData
	Charts    []Chart
	Timeline  Timeline
	TimeNote  string
	Bad       []BadLine
	Lines     int
	Offset    int64
	ConfigErr string
	SumErr    string
	Config    map[string]any
	Zoom      stepRange
	Live      bool
}

func (h *Handler) serveRun(w http.ResponseWriter, r *http.Request) {
	zoom, err := parseRange(r.URL.Query().Get("from"), r.URL.Query().Get("to"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d, ok := h.run(w, r, r.PathValue("run"))
	if !ok {
		return
	}
	served, note := h.replicaSpans(d.dir)
	p := runPage{runData: d, Bad: d.metrics.bad, Lines: d.metrics.lines, Offset: d.metrics.offset,
		ConfigErr: d.cfgErr, SumErr: d.sumErr, Config: d.config, Zoom: zoom, TimeNote: note,
		Live: d.Status == Running && !zoom.Set()}
	steps := zoom.steps(d.metrics.steps)
	p.Charts = runCharts(steps, zoom.evals(d.evals))
	p.Timeline = newTimeline(steps, zoom.spans(served), configuredInt(d.config, "substeps"))
	h.render(w, "run.tmpl", p)
}

// maxTimelineSamples bounds the samples.jsonl the run page reads for the
// timeline's per-replica lines; past it the timeline shows metrics.jsonl's
// served_version alone.
const maxTimelineSamples = 16 << 20

// replicaSpans reads the versions each replica served from the run's
// samples.jsonl when it is small enough, with a note when it is not.
func (h *Handler) replicaSpans(dir string) (map[string][]replicaSpan, string) {
	path := filepath.Join(dir, runlog.SamplesFile)
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, "served versions from metrics.jsonl (no samples.jsonl names replicas)"
	case st.Size() > maxTimelineSamples:
		return nil, fmt.Sprintf("served versions from metrics.jsonl: samples.jsonl is %d MiB, past the %d MiB the page reads for per-replica lines", st.Size()>>20, maxTimelineSamples>>20)
	}
	l, err := readSamplesFile(path, 0, 0) // at most maxTimelineSamples bytes
	if err != nil {
		return nil, err.Error()
	}
	if _, unnamed := l.served[""]; len(l.served) == 0 || (len(l.served) == 1 && unnamed) {
		return nil, "served versions from metrics.jsonl (samples.jsonl names no replicas)"
	}
	return l.served, "served versions per replica from samples.jsonl"
}

func (h *Handler) serveCompare(w http.ResponseWriter, r *http.Request) {
	names := r.URL.Query()["run"]
	if len(names) < 2 || len(names) > maxCompare {
		http.Error(w, fmt.Sprintf("compare needs 2 to %d runs: /compare?run=A&run=B; got %d", maxCompare, len(names)), http.StatusBadRequest)
		return
	}
	var runs []*runData
	cfgs := make([]map[string]any, 0, len(names))
	for _, n := range names {
		d, ok := h.run(w, r, n)
		if !ok {
			return
		}
		runs = append(runs, d)
		cfgs = append(cfgs, d.config)
	}
	h.render(w, "compare.tmpl", map[string]any{"Runs": runs, "Charts": compareCharts(runs), "Diff": configDiff(cfgs)})
}

// ckRow is one checkpoint of the checkpoints page.
type ckRow struct {
	checkpoint.Checkpoint
	URI      string
	Size     int64
	Manifest string
}

// CheckpointsDir is the store folder inside a run folder.
const CheckpointsDir = "checkpoints"

func (h *Handler) serveCheckpoints(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("run")
	dir, err := runDir(h.root, name)
	if err != nil {
		h.fail(w, err)
		return
	}
	var rows []ckRow
	var problems []string
	storeDir := filepath.Join(dir, CheckpointsDir)
	if fileExists(storeDir) {
		st, err := checkpoint.Open(storeDir)
		if err != nil {
			h.fail(w, err)
			return
		}
		runs, err := st.Runs()
		if err != nil {
			problems = append(problems, err.Error())
		}
		for _, run := range runs {
			cks, err := st.List(run)
			if err != nil {
				problems = append(problems, err.Error())
			}
			for _, ck := range cks {
				b, err := ck.Manifest.Encode()
				if err != nil && !errors.Is(err, checkpoint.ErrCorrupt) {
					problems = append(problems, err.Error())
				}
				rows = append(rows, ckRow{Checkpoint: ck, URI: ck.URI().String(), Size: ck.Manifest.Size(), Manifest: string(b)})
			}
		}
	}
	h.render(w, "checkpoints.tmpl", map[string]any{"Name": name, "Rows": rows, "Problems": problems})
}
