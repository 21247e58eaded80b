package runlog

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	green  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
)

// RenderPlots draws reward.{svg,png} (mean reward and held-out accuracy per
// step), staleness.{svg,png} (histogram of the staleness of every trained
// group) and throughput.{svg,png} (tokens/s and samples/s per step) into dir,
// and returns the paths written.
func RenderPlots(dir string, recs []Record) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, pl := range []struct {
		name string
		make func([]Record) (*plot.Plot, error)
	}{
		{"reward", rewardPlot},
		{"staleness", stalenessPlot},
		{"throughput", throughputPlot},
	} {
		p, err := pl.make(recs)
		if err != nil {
			return written, fmt.Errorf("%s plot: %w", pl.name, err)
		}
		for _, ext := range []string{".svg", ".png"} {
			path := filepath.Join(dir, pl.name+ext)
			if err := p.Save(7*vg.Inch, 4*vg.Inch, path); err != nil {
				return written, fmt.Errorf("save %s: %w", path, err)
			}
			written = append(written, path)
		}
	}
	return written, nil
}

func rewardPlot(recs []Record) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Reward and held-out accuracy"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "value"
	reward := make(plotter.XYs, 0, len(recs))
	var acc plotter.XYs
	for _, r := range recs {
		reward = append(reward, plotter.XY{X: float64(r.Step), Y: r.RewardMean})
		if r.Accuracy != nil {
			acc = append(acc, plotter.XY{X: float64(r.Step), Y: *r.Accuracy})
		}
	}
	l, err := plotter.NewLine(reward)
	if err != nil {
		return nil, err
	}
	l.Color = blue
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add("mean reward (train batch)", l)
	if len(acc) > 0 {
		al, ap, err := plotter.NewLinePoints(acc)
		if err != nil {
			return nil, err
		}
		al.Color, ap.Color = orange, orange
		al.Width = vg.Points(1.5)
		p.Add(al, ap)
		p.Legend.Add("held-out accuracy", al, ap)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	return p, nil
}

func stalenessPlot(recs []Record) (*plot.Plot, error) {
	hist := map[int]int{}
	maxS := 0
	for _, r := range recs {
		for s, n := range r.Staleness {
			hist[s] += n
			maxS = max(maxS, s)
		}
	}
	vals := make(plotter.Values, maxS+1)
	for s, n := range hist {
		vals[s] = float64(n)
	}
	p := plot.New()
	p.Title.Text = "Staleness of trained groups"
	p.X.Label.Text = "staleness (optimizer steps)"
	p.Y.Label.Text = "groups"
	bars, err := plotter.NewBarChart(vals, vg.Points(40))
	if err != nil {
		return nil, err
	}
	bars.Color = blue
	p.Add(bars)
	names := make([]string, len(vals))
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	p.NominalX(names...)
	p.X.Padding = vg.Points(30)
	return p, nil
}

func throughputPlot(recs []Record) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Throughput"
	p.X.Label.Text = "step"
	p.Y.Label.Text = "per second"
	tok := make(plotter.XYs, 0, len(recs))
	smp := make(plotter.XYs, 0, len(recs))
	sorted := append([]Record(nil), recs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Step < sorted[j].Step })
	for _, r := range sorted {
		tok = append(tok, plotter.XY{X: float64(r.Step), Y: r.TokensPerSec})
		smp = append(smp, plotter.XY{X: float64(r.Step), Y: r.SamplesPerSec})
	}
	tl, err := plotter.NewLine(tok)
	if err != nil {
		return nil, err
	}
	tl.Color = green
	tl.Width = vg.Points(1.5)
	sl, err := plotter.NewLine(smp)
	if err != nil {
		return nil, err
	}
	sl.Color = orange
	sl.Width = vg.Points(1.5)
	p.Add(tl, sl, plotter.NewGrid())
	p.Legend.Add("sampled tokens/s", tl)
	p.Legend.Add("samples/s", sl)
	p.Legend.Top = true
	return p, nil
}
