package trace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// maxArrivals bounds the arrivals one call returns (800 MB of offsets).
const maxArrivals = 100_000_000

// streamArrivals is the PCG stream of Arrivals.
const streamArrivals uint64 = 0xa441

// Arrivals turns s (already scaled to the wanted load) into request arrival
// offsets from the series start, sorted, reproducibly from seed. Step i
// gets round(Σ_{j≤i} Values[j]) − round(Σ_{j<i} Values[j]) arrivals, so
// fractional counts carry over and the total is the rounded total; within
// a step they are placed uniformly at random, which is a Poisson process
// conditioned on the count. Every offset lies in [0, s.Span()).
func Arrivals(s Series, seed uint64) ([]time.Duration, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	total := math.Floor(s.Total() + 0.5)
	if total > maxArrivals {
		return nil, fmt.Errorf("arrivals %s: %g requests, more than the limit of %d", s.label(), total, maxArrivals)
	}
	r := rand.New(rand.NewPCG(seed, streamArrivals))
	out := make([]time.Duration, 0, int(total))
	var cum float64
	emitted := 0
	for i, v := range s.Values {
		cum += v
		n := int(math.Floor(cum+0.5)) - emitted
		start := time.Duration(i) * s.Step
		from := len(out)
		for range n {
			out = append(out, start+time.Duration(r.Int64N(int64(s.Step))))
		}
		slices.Sort(out[from:])
		emitted += n
	}
	return out, nil
}
