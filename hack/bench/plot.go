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

	p := plot.New()
	p.Title.Text = fmt.Sprintf("First Pod after the due instant T, N = %d", r.N)
	p.X.Label.Text = "seconds after T (log scale)"
	p.Y.Label.Text = "fraction of units started"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	// Room above 1 for the legend, so it covers no curve.
	p.Y.Min, p.Y.Max = 0, 1.3
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25}, {Value: 0.5, Label: "0.5"}, {Value: 0.75}, {Value: 1, Label: "1"}})
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	xMin, xMax := 1.0, 10.0
	for _, s := range all {
		if len(s.samples) == 0 {
			continue
		}
		xys := cumulative(s.samples, s.n)
		xMin = min(xMin, xys[0].X)
		xMax = max(xMax, xys[len(xys)-1].X)
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", s.label, err)
		}
		line.Color = s.color
		line.Width = vg.Points(1.5)
		if s.dashed {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(line)
		p.Legend.Add(s.label, line)
	}
	p.X.Min, p.X.Max = xMin/1.5, xMax*1.5
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("saving the plot %s: %w", path, err)
	}
	return nil
}

// plotMemory draws the controller's RSS and peak RSS against the number of
// pending Ats, one line per controller read (this build, and the one before
// if the run read it), on a log axis, and saves it to path.
func plotMemory(r *Result, path string) error {
	p := plot.New()
	p.Title.Text = "Controller memory with pending Ats, each read after a restart"
	p.X.Label.Text = "pending Ats (log scale)"
	p.Y.Label.Text = "MiB"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
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
		for _, l := range []struct {
			label  string
			xys    plotter.XYs
			dashed bool
		}{{which + ": RSS once idle", rss, false}, {which + ": peak RSS (the initial list)", peak, true}} {
			line, points, err := plotter.NewLinePoints(l.xys)
			if err != nil {
				return fmt.Errorf("plotting %s: %w", l.label, err)
			}
			line.Color, points.Color = colors[which], colors[which]
			line.Width = vg.Points(1.5)
			if l.dashed {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(line, points)
			p.Legend.Add(l.label, line)
		}
	}
	// Room above the lines for the legend.
	p.Y.Min, p.Y.Max = 0, yMax*1.45
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("saving the plot %s: %w", path, err)
	}
	return nil
}
