package trace

import (
	"fmt"
	"slices"
	"time"
)

// maxBins bounds the length of a binned series (about 3 years of seconds) so
// that a stray timestamp cannot exhaust memory.
const maxBins = 100_000_000

// BinArrivals counts arrivals (offsets from any common origin, in any order)
// into consecutive bins of length step. The first bin starts at the earliest
// arrival and the last bin holds the latest one, so every arrival is counted
// (the last bin may be only partly covered by the data).
func BinArrivals(name string, at []time.Duration, step time.Duration) (Series, error) {
	if step <= 0 {
		return Series{}, fmt.Errorf("%s: bin step %v must be positive", name, step)
	}
	if len(at) == 0 {
		return Series{}, fmt.Errorf("%s: no arrivals to bin", name)
	}
	lo, hi := slices.Min(at), slices.Max(at)
	span := uint64(hi - lo) // hi >= lo, so no overflow in unsigned arithmetic
	n := span/uint64(step) + 1
	if n > maxBins {
		return Series{}, fmt.Errorf("%s: arrivals span %v, which needs %d bins of %v (limit %d): use a longer step", name, time.Duration(span), n, step, maxBins)
	}
	s := Series{Name: name, Step: step, Values: make([]float64, n)}
	for _, t := range at {
		s.Values[uint64(t-lo)/uint64(step)]++
	}
	return s, nil
}
