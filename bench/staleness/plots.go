package main

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
)

var palette = []color.RGBA{
	{R: 31, G: 119, B: 180, A: 255},
	{R: 255, G: 127, B: 14, A: 255},
	{R: 44, G: 160, B: 44, A: 255},
	{R: 214, G: 39, B: 40, A: 255},
	{R: 148, G: 103, B: 189, A: 255},
}

// errorPoints are points with a symmetric vertical error (the std over
// seeds).
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

// accuracyPlot draws held-out accuracy against k, one line per objective,
// with error bars when there are several seeds, and the base model's
// accuracy as a dashed line.
func accuracyPlot(t LearningTable) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Held-out accuracy after %d steps vs max staleness k", t.Settings.Steps)
	p.X.Label.Text = "max staleness k"
	p.Y.Label.Text = "held-out accuracy"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true // above the curves: accuracy stays well below 1 in these runs
	byObj := map[algo.Objective]*errorPoints{}
	var order []algo.Objective
	var base plotter.XYs
	for _, c := range t.Cells {
		e, ok := byObj[c.Objective]
		if !ok {
			e = &errorPoints{}
			byObj[c.Objective] = e
			order = append(order, c.Objective)
		}
		e.XYs = append(e.XYs, plotter.XY{X: float64(c.K), Y: c.FinalAccuracy.Mean})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{c.FinalAccuracy.Std, c.FinalAccuracy.Std})
		if len(base) == 0 || base[len(base)-1].X != float64(c.K) {
			base = append(base, plotter.XY{X: float64(c.K), Y: c.BaseAccuracy.Mean})
		}
	}
	for i, obj := range order {
		e := byObj[obj]
		col := palette[i%len(palette)]
		line, pts, err := plotter.NewLinePoints(e.XYs)
		if err != nil {
			return nil, err
		}
		line.Color, pts.Color = col, col
		pts.Shape = draw.CircleGlyph{}
		p.Add(line, pts)
		if t.Settings.Seeds != nil && len(t.Settings.Seeds) > 1 {
			bars, err := plotter.NewYErrorBars(e)
			if err != nil {
				return nil, err
			}
			bars.Color = col
			p.Add(bars)
		}
		p.Legend.Add(string(obj), line, pts)
	}
	if len(base) > 0 {
		l, err := plotter.NewLine(base)
		if err != nil {
			return nil, err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = color.RGBA{A: 255, R: 120, G: 120, B: 120}
		p.Add(l)
		p.Legend.Add("base model", l)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// throughputPlot draws steps/s against k, one line per stale policy, with
// the ideal (1/(T+S) at k = 0, 1/max(T,S) above) dashed.
func throughputPlot(t ThroughputTable) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Simulated throughput vs max staleness k"
	p.X.Label.Text = "max staleness k"
	p.Y.Label.Text = "learner steps per second"
	p.Legend.Top = false // below the curves, which sit near the ideal
	byPol := map[rl.StalePolicy]plotter.XYs{}
	var order []rl.StalePolicy
	for _, c := range t.Cells {
		if _, ok := byPol[c.Policy]; !ok {
			order = append(order, c.Policy)
		}
		byPol[c.Policy] = append(byPol[c.Policy], plotter.XY{X: float64(c.K), Y: c.StepsPerSecond})
	}
	for i, pol := range order {
		col := palette[i%len(palette)]
		line, pts, err := plotter.NewLinePoints(byPol[pol])
		if err != nil {
			return nil, err
		}
		line.Color, pts.Color = col, col
		pts.Shape = draw.CircleGlyph{}
		p.Add(line, pts)
		p.Legend.Add(string(pol), line, pts)
	}
	var ideal plotter.XYs
	for _, k := range t.Settings.Ks {
		run := t.Ideal.AsyncRunSeconds
		if k == 0 {
			run = t.Ideal.SyncRunSeconds
		}
		if run > 0 {
			ideal = append(ideal, plotter.XY{X: float64(k), Y: float64(t.Settings.Steps) / run})
		}
	}
	if len(ideal) > 0 {
		l, err := plotter.NewLine(ideal)
		if err != nil {
			return nil, err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = color.RGBA{A: 255, R: 120, G: 120, B: 120}
		p.Add(l)
		p.Legend.Add("ideal: T+S per step (k=0), max(T,S) per step + S (k≥1)", l)
	}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	return p, nil
}

// savePlot writes p as name.svg and name.png under dir.
func savePlot(p *plot.Plot, dir, name string) ([]string, error) {
	var paths []string
	for _, ext := range []string{".svg", ".png"} {
		path := filepath.Join(dir, name+ext)
		if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
			return paths, fmt.Errorf("save %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
