package gym

import (
	"errors"
	"fmt"
	"math"
)

// Space is a box: one named, bounded dimension per entry.
type Space struct {
	Names     []string
	Low, High []float64
}

// Dim is the number of dimensions.
func (s Space) Dim() int { return len(s.Names) }

// Validate reports a malformed space.
func (s Space) Validate() error {
	if len(s.Low) != len(s.Names) || len(s.High) != len(s.Names) {
		return fmt.Errorf("space: %d names, %d lows, %d highs", len(s.Names), len(s.Low), len(s.High))
	}
	for i, n := range s.Names {
		if !(s.Low[i] <= s.High[i]) {
			return fmt.Errorf("space: dimension %d (%s): low %g > high %g", i, n, s.Low[i], s.High[i])
		}
	}
	return nil
}

// Contains reports, naming the dimension, why x is not in the space.
func (s Space) Contains(x []float64) error {
	if len(x) != s.Dim() {
		return fmt.Errorf("got %d values, want %d (%v)", len(x), s.Dim(), s.Names)
	}
	var errs []error
	for i, v := range x {
		if math.IsNaN(v) || v < s.Low[i] || v > s.High[i] {
			errs = append(errs, fmt.Errorf("%s = %g outside [%g, %g]", s.Names[i], v, s.Low[i], s.High[i]))
		}
	}
	return errors.Join(errs...)
}

// Clip writes x clipped into the space to dst (NaN becomes the low bound)
// and returns dst; dst may be x.
func (s Space) Clip(dst, x []float64) []float64 {
	if len(dst) != len(x) || len(x) != s.Dim() {
		panic("gym: Clip length mismatch")
	}
	for i, v := range x {
		switch {
		case math.IsNaN(v) || v < s.Low[i]:
			dst[i] = s.Low[i]
		case v > s.High[i]:
			dst[i] = s.High[i]
		default:
			dst[i] = v
		}
	}
	return dst
}
