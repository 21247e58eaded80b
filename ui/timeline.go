package ui

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strings"
)

// The timeline spans the page: twice a chart's width, a little lower.
const timelineW, timelineH = 2 * chartW, 200

// Timeline is the version timeline of a run: per step, the trainer's
// version, the version the samplers served (each replica's, when
// samples.jsonl names replicas, else metrics.jsonl's served_version), and
// the versions the step's batch trained on (one mark per version, its size
// the number of groups). It is the picture of asynchronous RL: the gap
// between the trainer's line and the batch marks is the staleness.
type Timeline struct {
	Trainer  Series   // x step, y version after the step
	Served   []Series // one per replica (or one "served"), y the newest version served
	Batches  []batchMark
	Stride   int // every Stride-th step's marks are drawn (1: all)
	Replicas bool
}

// batchMark is the groups of one version in one step's batch.
type batchMark struct {
	Step      int
	Version   int64
	Groups    int
	Staleness int
}

// newTimeline builds the timeline from the run's metrics and, when it has
// any, its rollouts' per-replica spans. substeps is the optimizer steps per
// learner step (the version advances by it each step).
func newTimeline(steps []step, served map[string][]replicaSpan, substeps int) Timeline {
	t := Timeline{Stride: max(1, (len(steps)+MaxPoints-1)/MaxPoints)}
	t.Trainer = stepSeries("trainer version", steps, mVersion)
	prev := int64(-1)
	for i := range steps {
		before := steps[i].Version - int64(max(substeps, 1))
		if prev >= 0 && i > 0 && steps[i-1].Step == steps[i].Step-1 {
			before = prev
		}
		prev = steps[i].Version
		if i%t.Stride != 0 {
			continue
		}
		for _, k := range sortedKeys(steps[i].Staleness) {
			if n := steps[i].Staleness[k]; n > 0 {
				t.Batches = append(t.Batches, batchMark{Step: steps[i].Step, Version: max(before-int64(k), 0), Groups: n, Staleness: k})
			}
		}
	}
	if len(served) == 0 {
		t.Served = []Series{stepSeries("served version", steps, mServed)}
		return t
	}
	t.Replicas = true
	for _, name := range sortedKeys(served) {
		spans := served[name]
		xs, ys := make([]float64, len(spans)), make([]float64, len(spans))
		for i, s := range spans {
			xs[i], ys[i] = float64(s.Step), float64(s.Max)
		}
		xs, ys = downsample(xs, ys, MaxPoints)
		label := name
		if label == "" {
			label = "sampler"
		}
		t.Served = append(t.Served, Series{Name: "served by " + label, X: xs, Y: ys}) // not live: no field
	}
	return t
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// chart is the timeline's lines as a Chart, for bounds and axes.
func (t Timeline) chart() Chart {
	c := Chart{ID: "timeline", Title: "Version timeline", XLabel: "step", Series: append([]Series{t.Trainer}, t.Served...)}
	var bx, by []float64
	for _, b := range t.Batches {
		bx, by = append(bx, float64(b.Step)), append(by, float64(b.Version))
	}
	c.Series = append(c.Series, Series{Name: "batch", X: bx, Y: by})
	return c
}

// SVG renders the timeline: the trainer's and samplers' versions as step
// lines (their points carry hover titles like a Chart's), the batch's
// versions as circles of area proportional to their groups.
func (t Timeline) SVG() template.HTML {
	c := t.chart()
	f := newFrame(timelineW, timelineH, c)
	sx, sy := f.sx, f.sy
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart timeline" id="chart-timeline" data-chart="timeline" data-points="%d" viewBox="0 0 %d %d" role="img" aria-label="version timeline">`,
		len(t.Batches), f.w, f.h)
	b.WriteString(`<title>Version timeline</title>`)
	f.axes(&b, "step")
	lines := append([]Series{t.Trainer}, t.Served...)
	for si, s := range lines {
		fmt.Fprintf(&b, `<g class="series" data-name="%s" data-field="%s" style="--c:%s">`, html.EscapeString(s.Name), html.EscapeString(s.Field), palette[si%len(palette)])
		var pts strings.Builder
		for i := range s.X {
			if i > 0 { // a step line: hold the previous version until this step
				fmt.Fprintf(&pts, "%s,%s ", px(sx(s.X[i])), px(sy(s.Y[i-1])))
			}
			fmt.Fprintf(&pts, "%s,%s ", px(sx(s.X[i])), px(sy(s.Y[i])))
		}
		fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.TrimSpace(pts.String()))
		for i := range s.X {
			fmt.Fprintf(&b, `<circle class="pt" cx="%s" cy="%s" r="2" data-x="%s" data-y="%s"><title>%s: step %s, version %s</title></circle>`,
				px(sx(s.X[i])), px(sy(s.Y[i])), num(s.X[i]), num(s.Y[i]), html.EscapeString(s.Name), num(s.X[i]), num(s.Y[i]))
		}
		b.WriteString(`</g>`)
	}
	t.batchMarks(&b, f, palette[len(lines)%len(palette)])
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every interpolated string above is escaped or numeric
}

// batchMarks writes the batch circles, over the lines: area proportional
// to the groups of that version.
func (t Timeline) batchMarks(b *strings.Builder, f frame, color string) {
	maxGroups := 1
	for _, m := range t.Batches {
		maxGroups = max(maxGroups, m.Groups)
	}
	fmt.Fprintf(b, `<g class="batches" data-name="batch" style="--c:%s">`, color)
	for _, m := range t.Batches {
		r := 2 + 2.5*math.Sqrt(float64(m.Groups)/float64(maxGroups))
		fmt.Fprintf(b, `<circle class="batch" cx="%s" cy="%s" r="%s" data-x="%d" data-y="%d"><title>step %d trained on %d group(s) of version %d (staleness %d)</title></circle>`,
			px(f.sx(float64(m.Step))), px(f.sy(float64(m.Version))), px(r), m.Step, m.Version, m.Step, m.Groups, m.Version, m.Staleness)
	}
	b.WriteString(`</g>`)
}

// Legend names the timeline's lines and marks.
func (t Timeline) Legend() template.HTML {
	c := t.chart()
	c.Series[len(c.Series)-1].Name = "batch trained on (area: groups)"
	return c.Legend()
}
