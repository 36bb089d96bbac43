package plot

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Sample is one distribution of a CDF figure: its observations, in any
// order.
type Sample struct {
	Name   string
	Values []float64
}

// CDF is a figure of empirical cumulative distributions, one step line per
// sample, like the paper's Fig. 8 (episodes to converge, CPU-seconds of
// training, utilisation deficit across applications).
type CDF struct {
	Title, XLabel string
	Samples       []Sample
	// Width and Height default to 16 cm × 10 cm.
	Width, Height vg.Length
}

// ECDF is the empirical distribution of values: the sorted distinct
// values xs and, at each, the fraction ps of values at or below it.
func ECDF(values []float64) (xs, ps []float64) {
	s := slices.Clone(values)
	slices.Sort(s)
	n := float64(len(s))
	for i, v := range s {
		if i+1 < len(s) && s[i+1] == v {
			continue
		}
		xs = append(xs, v)
		ps = append(ps, float64(i+1)/n)
	}
	return xs, ps
}

// SaveCDF draws c into path; the extension picks the format.
func SaveCDF(path string, c CDF) error {
	ext, err := format(path)
	if err != nil {
		return err
	}
	p, err := c.plot()
	if err != nil {
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	return write(path, ext, p, c.Width, c.Height)
}

func (c CDF) plot() (*plot.Plot, error) {
	if len(c.Samples) == 0 {
		return nil, errors.New("no samples to draw")
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = "fraction of applications"
	p.Y.Min, p.Y.Max = 0, 1
	for k, s := range c.Samples {
		if len(s.Values) == 0 {
			return nil, fmt.Errorf("sample %d (%q) is empty", k, s.Name)
		}
		if i := slices.IndexFunc(s.Values, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }); i >= 0 {
			return nil, fmt.Errorf("sample %q: value %d is %v", s.Name, i+1, s.Values[i])
		}
		xs, ps := ECDF(s.Values)
		// A step line: flat at each fraction until the next value.
		pts := plotter.XYs{{X: xs[0], Y: 0}}
		for i, x := range xs {
			pts = append(pts, plotter.XY{X: x, Y: pts[len(pts)-1].Y}, plotter.XY{X: x, Y: ps[i]})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %w", s.Name, err)
		}
		line.Color = palette[k%len(palette)]
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(s.Name, line)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}
