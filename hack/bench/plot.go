package main

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// floorSeconds is where the log axis starts: lateness below a millisecond is
// drawn at a millisecond.
const floorSeconds = 0.001

// series is one cumulative curve of the plot.
type series struct {
	label   string
	samples []float64
	n       int // units due; lost ones keep the curve below 1
	color   color.Color
	dashed  bool
}

// cumulative returns the step points of the empirical distribution of
// samples over n units: at each sample, the fraction of units at or below it.
func cumulative(samples []float64, n int) plotter.XYs {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	xys := make(plotter.XYs, 0, 2*len(sorted))
	for i, x := range sorted {
		x = max(x, floorSeconds)
		xys = append(xys, plotter.XY{X: x, Y: float64(i) / float64(n)}, plotter.XY{X: x, Y: float64(i+1) / float64(n)})
	}
	return xys
}

// plotLateness draws the first-Pod lateness of each stage, cumulative, on a
// log time axis, and saves it to path (.svg or .png).
func plotLateness(r *Result, path string) error {
	var all []series
	colors := map[string]color.Color{
		"raw":     color.RGBA{R: 90, G: 90, B: 90, A: 255},
		"shaped":  color.RGBA{R: 44, G: 160, B: 44, A: 255},
		"cnat":    color.RGBA{R: 31, G: 119, B: 180, A: 255},
		"cronjob": color.RGBA{R: 214, G: 39, B: 40, A: 255},
	}
	for _, s := range r.Stages {
		if s.Job != nil {
			all = append(all, series{label: r.label(s, "CronJob controller: Job"), samples: s.JobSamples, n: s.N, color: colors[s.Name], dashed: true})
			all = append(all, series{label: r.label(s, "CronJob controller: first Pod"), samples: s.FirstPodSamples, n: s.N, color: colors[s.Name]})
			continue
		}
		label := s.Name
		if s.Name == "raw" {
			label = fmt.Sprintf("raw Pod creates, concurrency %d (the limit)", r.Concurrency)
		}
		all = append(all, series{label: r.label(s, label), samples: s.FirstPodSamples, n: s.N, color: colors[s.Name]})
	}

	p := newPlot(fmt.Sprintf("First Pod after the due instant T, N = %d", r.N), "seconds after T (log scale)", "fraction of units started")
	// Room above 1 for the legend, so it covers no curve.
	p.Y.Min, p.Y.Max = 0, 1.3
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25}, {Value: 0.5, Label: "0.5"}, {Value: 0.75}, {Value: 1, Label: "1"}})
	xMin, xMax := 1.0, 10.0
	for _, s := range all {
		if len(s.samples) == 0 {
			continue
		}
		xys := cumulative(s.samples, s.n)
		xMin = min(xMin, xys[0].X)
		xMax = max(xMax, xys[len(xys)-1].X)
		if err := addLine(p, s.label, xys, s.color, s.dashed, false); err != nil {
			return err
		}
	}
	p.X.Min, p.X.Max = xMin/1.5, xMax*1.5
	return save(p, path)
}

// plotMemory draws the controller's RSS and peak RSS against the number of
// pending Ats, one line per controller read (this build, and the one before
// if the run read it), on a log axis, and saves it to path.
func plotMemory(r *Result, path string) error {
	p := newPlot("Controller memory with pending Ats, each read after a restart", "pending Ats (log scale)", "MiB")
	colors := map[string]color.Color{thisBuild: color.RGBA{R: 31, G: 119, B: 180, A: 255}, before: color.RGBA{R: 214, G: 39, B: 40, A: 255}}
	yMax := 0.0
	for _, which := range []string{before, thisBuild} {
		var rss, peak plotter.XYs
		for _, m := range r.Memory {
			if m.PendingAts > 0 && m.Controller == which {
				rss = append(rss, plotter.XY{X: float64(m.PendingAts), Y: float64(m.RSSBytes) / (1 << 20)})
				peak = append(peak, plotter.XY{X: float64(m.PendingAts), Y: float64(m.PeakRSSBytes) / (1 << 20)})
				yMax = max(yMax, float64(m.PeakRSSBytes)/(1<<20))
			}
		}
		if len(rss) == 0 {
			continue
		}
		if err := addLine(p, which+": RSS once idle", rss, colors[which], false, true); err != nil {
			return err
		}
		if err := addLine(p, which+": peak RSS (the initial list)", peak, colors[which], true, true); err != nil {
			return err
		}
	}
	// Room above the lines for the legend.
	p.Y.Min, p.Y.Max = 0, yMax*1.45
	return save(p, path)
}

// newPlot is a plot with a log x axis, a grid and the legend top left.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// addLine draws xys as a line of colour c, dashed or solid, its points
// marked or not, and names it in the legend.
func addLine(p *plot.Plot, label string, xys plotter.XYs, c color.Color, dashed, points bool) error {
	line, marks, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", label, err)
	}
	line.Color, marks.Color = c, c
	line.Width = vg.Points(1.5)
	if dashed {
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(line)
	if points {
		p.Add(marks)
	}
	p.Legend.Add(label, line)
	return nil
}

// save writes the plot to path, .svg or .png.
func save(p *plot.Plot, path string) error {
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("saving the plot %s: %w", path, err)
	}
	return nil
}
