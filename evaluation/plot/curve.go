package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line: Y[i] at x = i+1 (episodes are numbered from 1).
type Series struct {
	Name string
	Y    []float64
}

// Curves is one learning-curve figure.
type Curves struct {
	Title, XLabel, YLabel string
	// Series are drawn as thin raw lines with a thick moving average of
	// Smooth points (no average when Smooth ≤ 1).
	Series []Series
	Smooth int
	// Reference lines, such as the baseline's reward, drawn dashed across
	// the whole x range.
	References []Reference
	// Width and Height default to 16 cm × 10 cm.
	Width, Height vg.Length
}

// Reference is a horizontal line at Y.
type Reference struct {
	Name string
	Y    float64
}

// CheckPath reports whether Save can write path's format.
func CheckPath(path string) error {
	_, err := format(path)
	return err
}

// format is the image format of path's extension.
func format(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg", ".pdf":
		return ext[1:], nil
	}
	return "", fmt.Errorf("plot: %s: unsupported extension %q (want .png, .svg or .pdf)", path, filepath.Ext(path))
}

// Save draws c into path; the extension picks the format.
func Save(path string, c Curves) error {
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

// write draws p with its legend in a column on the right into path in
// format ext, w × h (16 cm × 10 cm when zero) plus the legend.
func write(path, ext string, p *plot.Plot, w, h vg.Length) error {
	if w <= 0 {
		w = 16 * vg.Centimeter
	}
	if h <= 0 {
		h = 10 * vg.Centimeter
	}
	// The legend gets its own column on the right so it never hides lines.
	const legendWidth = 3.5 * vg.Centimeter
	cw, err := draw.NewFormattedCanvas(w+legendWidth, h, ext)
	if err != nil {
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	dc := draw.New(cw)
	lg := p.Legend
	lg.Top, lg.Left = true, true
	p.Legend = plot.NewLegend()
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	lg.Draw(draw.Crop(dc, w+vg.Points(6), 0, 0, -vg.Points(12)))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := cw.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

func (c Curves) plot() (*plot.Plot, error) {
	if len(c.Series) == 0 {
		return nil, errors.New("no series to draw")
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	n := 0
	for k, s := range c.Series {
		if len(s.Y) == 0 {
			return nil, fmt.Errorf("series %d (%q) is empty", k, s.Name)
		}
		for i, y := range s.Y {
			if math.IsNaN(y) || math.IsInf(y, 0) {
				return nil, fmt.Errorf("series %q: point %d is %v", s.Name, i+1, y)
			}
		}
		n = max(n, len(s.Y))
		col := palette[k%len(palette)]
		raw, err := plotter.NewLine(xys(s.Y))
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Name, err)
		}
		raw.Color = fade(col)
		raw.Width = vg.Points(0.5)
		p.Add(raw)
		avg := s.Y
		if c.Smooth > 1 {
			avg = MovingAverage(s.Y, c.Smooth)
		}
		line, err := plotter.NewLine(xys(avg))
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Name, err)
		}
		line.Color = col
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(s.Name, line)
	}
	for k, r := range c.References {
		if math.IsNaN(r.Y) || math.IsInf(r.Y, 0) {
			return nil, fmt.Errorf("reference %q is %v", r.Name, r.Y)
		}
		line, err := plotter.NewLine(plotter.XYs{{X: 1, Y: r.Y}, {X: float64(max(n, 2)), Y: r.Y}})
		if err != nil {
			return nil, err
		}
		line.Color = refColors[k%len(refColors)]
		line.Width = vg.Points(1)
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		p.Legend.Add(r.Name, line)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// MovingAverage returns the trailing mean of the last w points at each
// index (fewer at the start).
func MovingAverage(y []float64, w int) []float64 {
	out := make([]float64, len(y))
	var sum float64
	for i, v := range y {
		sum += v
		if i >= w {
			sum -= y[i-w]
		}
		out[i] = sum / float64(min(i+1, w))
	}
	return out
}

func xys(y []float64) plotter.XYs {
	pts := make(plotter.XYs, len(y))
	for i, v := range y {
		pts[i] = plotter.XY{X: float64(i + 1), Y: v}
	}
	return pts
}

var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

var refColors = []color.RGBA{
	{A: 0xff},
	{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
}

func fade(c color.RGBA) color.RGBA {
	c.A = 0x50
	c.R, c.G, c.B = uint8(uint16(c.R)*0x50/0xff), uint8(uint16(c.G)*0x50/0xff), uint8(uint16(c.B)*0x50/0xff)
	return c
}
