package calibration

import (
	"fmt"
	"io"
	"sort"

	"github.com/aware-autoscaler/aware/internal/quantile"
)

// Ratio compares one entry's CPU-seconds per request between two profiles.
type Ratio struct {
	Segment             string
	Size                int
	Measured, Reference float64
}

// Value is Measured / Reference.
func (r Ratio) Value() float64 { return r.Measured / r.Reference }

// CompareCPU pairs the entries present in both profiles whose reference
// CPU-seconds are at least floor (tiny costs are timer noise) and returns
// them sorted by ratio.
func CompareCPU(measured, reference *Profile, floor float64) []Ratio {
	var out []Ratio
	for _, e := range measured.Entries {
		ref, ok := reference.Lookup(e.Segment, e.Size)
		if !ok || ref.CPUSeconds < floor || ref.CPUSeconds == 0 {
			continue
		}
		out = append(out, Ratio{Segment: e.Segment, Size: e.Size, Measured: e.CPUSeconds, Reference: ref.CPUSeconds})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value() < out[j].Value() })
	return out
}

// WriteComparison prints a one-paragraph summary of CompareCPU's result: the
// median ratio and the extremes.
func WriteComparison(w io.Writer, rs []Ratio) error {
	if len(rs) == 0 {
		_, err := fmt.Fprintln(w, "CPU vs committed profile: no common entries")
		return err
	}
	values := make([]float64, len(rs)) // rs is sorted by value
	for i, r := range rs {
		values[i] = r.Value()
	}
	med := quantile.MedianSorted(values)
	lo, hi := rs[0], rs[len(rs)-1]
	_, err := fmt.Fprintf(w, "CPU-seconds per request, this run / committed profile over %d entries: median %.2f, lowest %.2f (%s %d), highest %.2f (%s %d)\n",
		len(rs), med, lo.Value(), lo.Segment, lo.Size, hi.Value(), hi.Segment, hi.Size)
	return err
}
