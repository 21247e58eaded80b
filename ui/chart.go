package ui

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// MaxPoints bounds the points of one chart series: longer series are
// downsampled to exactly MaxPoints points (see [downsample]), so a
// 100,000-step run's page stays small.
const MaxPoints = 400

// Series is one line of a chart. X and Y have the same length; the caller
// owns them.
type Series struct {
	Name string
	// Field names what a live metrics line adds to the series (see
	// assets/app.js): a field of the line ("reward_mean"), "staleness.K" (the
	// groups of staleness K), or "mean_staleness". Empty: not live.
	Field string
	X, Y  []float64
}

// Chart is one SVG line chart; Area fills under each line.
type Chart struct {
	ID, Title, XLabel string
	Series            []Series
	Area              bool
}

// Points returns the number of points the chart draws.
func (c Chart) Points() int {
	n := 0
	for _, s := range c.Series {
		n += len(s.X)
	}
	return n
}

// downsample returns xs, ys unchanged when they have at most limit points;
// otherwise it splits them into limit runs of consecutive points of equal
// size (±1) and returns each run's mean x and mean y: exactly limit points.
func downsample(xs, ys []float64, limit int) ([]float64, []float64) {
	n := len(xs)
	if n <= limit || limit <= 0 {
		return xs, ys
	}
	ox, oy := make([]float64, limit), make([]float64, limit)
	for b := range limit {
		lo, hi := b*n/limit, (b+1)*n/limit
		var sx, sy float64
		for i := lo; i < hi; i++ {
			sx += xs[i]
			sy += ys[i]
		}
		k := float64(hi - lo)
		ox[b], oy[b] = sx/k, sy/k
	}
	return ox, oy
}

// chart geometry, in SVG user units.
const (
	chartW, chartH         = 640, 240
	padL, padR, padT, padB = 56, 12, 12, 28
)

// palette colours series in order.
var palette = []string{"#2f6fdf", "#e0582b", "#1f9d55", "#9c4fd6", "#c99a06", "#d63384", "#0e9aa7", "#6c757d"}

// bounds returns the chart's data ranges, widened so none is empty.
func (c Chart) bounds() (x0, x1, y0, y1 float64) {
	x0, y0 = math.Inf(1), math.Inf(1)
	x1, y1 = math.Inf(-1), math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			x0, x1 = math.Min(x0, s.X[i]), math.Max(x1, s.X[i])
			y0, y1 = math.Min(y0, s.Y[i]), math.Max(y1, s.Y[i])
		}
	}
	if math.IsInf(x0, 1) {
		x0, x1, y0, y1 = 0, 1, 0, 1
	}
	if c.Area {
		y0 = math.Min(y0, 0)
	}
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	if y1 == y0 {
		y0, y1 = y0-1, y1+1
	}
	return x0, x1, y0, y1
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func px(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// SVG renders the chart. Each point is a <circle class="pt"> holding a
// <title> with its values (the hover text); the root carries the data
// ranges and each series its field, for the live script to extend.
func (c Chart) SVG() template.HTML {
	f := newFrame(chartW, chartH, c)
	x0, sx, sy := f.x0, f.sx, f.sy
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="chart-%s" data-chart="%s" data-points="%d" data-area="%t" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		html.EscapeString(c.ID), html.EscapeString(c.ID), c.Points(), c.Area, f.w, f.h, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(c.Title))
	f.axes(&b, c.XLabel)
	for si, s := range c.Series {
		color := palette[si%len(palette)]
		fmt.Fprintf(&b, `<g class="series" data-name="%s" data-field="%s" style="--c:%s">`, html.EscapeString(s.Name), html.EscapeString(s.Field), color)
		var pts strings.Builder
		for i := range s.X {
			fmt.Fprintf(&pts, "%s,%s ", px(sx(s.X[i])), px(sy(s.Y[i])))
		}
		if c.Area {
			fmt.Fprintf(&b, `<polygon class="area" points="%s,%s %s%s,%s"/>`, px(sx(firstOr(s.X, x0))), px(sy(0)), pts.String(), px(sx(lastOr(s.X, x0))), px(sy(0)))
		}
		fmt.Fprintf(&b, `<polyline class="line" points="%s"/>`, strings.TrimSpace(pts.String()))
		for i := range s.X {
			fmt.Fprintf(&b, `<circle class="pt" cx="%s" cy="%s" r="2" data-x="%s" data-y="%s"><title>%s: %s %s, %s</title></circle>`,
				px(sx(s.X[i])), px(sy(s.Y[i])), num(s.X[i]), num(s.Y[i]), html.EscapeString(s.Name), html.EscapeString(c.XLabel), num(s.X[i]), num(s.Y[i]))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every interpolated string above is escaped
}

// frame maps data to an SVG of w×h user units inside the padding.
type frame struct {
	w, h           int
	x0, x1, y0, y1 float64
}

func newFrame(w, h int, c Chart) frame {
	f := frame{w: w, h: h}
	f.x0, f.x1, f.y0, f.y1 = c.bounds()
	return f
}

func (f frame) sx(v float64) float64 {
	return padL + (v-f.x0)/(f.x1-f.x0)*float64(f.w-padL-padR)
}

func (f frame) sy(v float64) float64 {
	return float64(f.h-padB) - (v-f.y0)/(f.y1-f.y0)*float64(f.h-padT-padB)
}

// axes writes the frame's axes, and a grid line and label at each tick
// (assets/chart.js redraws them when it zooms, by the same rule).
func (f frame) axes(b *strings.Builder, xlabel string) {
	fmt.Fprintf(b, `<g class="axes"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/>`,
		padL, f.h-padB, f.w-padR, f.h-padB, padL, padT, padL, f.h-padB)
	ys, yd := ticks(f.y0, f.y1)
	for _, v := range ys {
		fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, padL, px(f.sy(v)), f.w-padR, px(f.sy(v)))
		fmt.Fprintf(b, `<text class="yt" x="%d" y="%s">%s</text>`, padL-4, px(f.sy(v)+3), tickLabel(v, yd))
	}
	xs, xd := ticks(f.x0, f.x1)
	for _, v := range xs {
		fmt.Fprintf(b, `<text class="xt" x="%s" y="%d">%s</text>`, px(f.sx(v)), f.h-padB+14, tickLabel(v, xd))
	}
	fmt.Fprintf(b, `<text class="xl" x="%d" y="%d">%s</text></g>`, f.w-padR, f.h-2, html.EscapeString(xlabel))
}

// ticks returns round tick values inside [lo, hi] (lo < hi), 1, 2, 2.5 or
// 5 times a power of ten apart, about five of them, and the decimals their
// labels need.
func ticks(lo, hi float64) ([]float64, int) {
	raw := (hi - lo) / 5
	k := math.Floor(math.Log10(raw))
	p := math.Pow(10, k)
	m := 10.0
	for _, c := range []float64{1, 2, 2.5, 5} {
		if raw <= c*p*(1+1e-9) {
			m = c
			break
		}
	}
	if m == 10 {
		m, k, p = 1, k+1, p*10
	}
	step := m * p
	d := max(0, int(-k))
	if m == 2.5 && k <= 0 { // 2.5, 0.25: one digit more; 25 none
		d++
	}
	var out []float64
	for i := math.Ceil(lo/step - 1e-9); i*step <= hi+step*1e-9; i++ {
		out = append(out, i*step)
	}
	return out, d
}

// tickLabel formats a tick with d decimals, or in exponent form beyond a
// million.
func tickLabel(v float64, d int) string {
	if math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	if v == 0 {
		v = 0 // -0 prints as "-0"
	}
	return strconv.FormatFloat(v, 'f', min(d, 10), 64)
}

// Legend renders the chart's series names in their colours.
func (c Chart) Legend() template.HTML {
	var b strings.Builder
	for si, s := range c.Series {
		fmt.Fprintf(&b, `<span class="key" style="--c:%s">%s</span> `, palette[si%len(palette)], html.EscapeString(s.Name))
	}
	return template.HTML(b.String())
}

func firstOr(v []float64, d float64) float64 {
	if len(v) == 0 {
		return d
	}
	return v[0]
}

func lastOr(v []float64, d float64) float64 {
	if len(v) == 0 {
		return d
	}
	return v[len(v)-1]
}
