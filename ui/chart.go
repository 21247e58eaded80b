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
	x0, x1, y0, y1 := c.bounds()
	sx := func(v float64) float64 { return padL + (v-x0)/(x1-x0)*(chartW-padL-padR) }
	sy := func(v float64) float64 { return chartH - padB - (v-y0)/(y1-y0)*(chartH-padT-padB) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="chart-%s" data-chart="%s" data-points="%d" data-x0="%s" data-x1="%s" data-y0="%s" data-y1="%s" data-area="%t" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		html.EscapeString(c.ID), html.EscapeString(c.ID), c.Points(), num(x0), num(x1), num(y0), num(y1), c.Area, chartW, chartH, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(c.Title))
	// Axes and ticks.
	fmt.Fprintf(&b, `<g class="axes"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/>`,
		padL, chartH-padB, chartW-padR, chartH-padB, padL, padT, padL, chartH-padB)
	for i := 0; i <= 4; i++ {
		yv := y0 + (y1-y0)*float64(i)/4
		xv := x0 + (x1-x0)*float64(i)/4
		fmt.Fprintf(&b, `<text class="yt" x="%d" y="%s">%s</text>`, padL-4, px(sy(yv)+3), html.EscapeString(strconv.FormatFloat(yv, 'g', 3, 64)))
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, padL, px(sy(yv)), chartW-padR, px(sy(yv)))
		fmt.Fprintf(&b, `<text class="xt" x="%s" y="%d">%s</text>`, px(sx(xv)), chartH-padB+14, html.EscapeString(strconv.FormatFloat(xv, 'g', 4, 64)))
	}
	fmt.Fprintf(&b, `<text class="xl" x="%d" y="%d">%s</text></g>`, chartW-padR, chartH-2, html.EscapeString(c.XLabel))
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
