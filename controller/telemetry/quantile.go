package telemetry

import (
	"math"
	"slices"
	"sort"
)

// Bucket is one cumulative bucket of a classic histogram: Count
// observations (here: observations per second) were at most UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// precisionTolerance is the relative difference below which adjacent
// cumulative counts are taken as equal (float noise from rate and sum).
const precisionTolerance = 1e-12

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) of the histogram given by
// cumulative buckets, the way Prometheus' histogram_quantile does for
// classic histograms: the buckets are sorted by upper bound, buckets with
// equal bounds merged, counts forced to be monotonic, and the quantile
// interpolated linearly inside the bucket holding rank q×total, with a
// lower bound of 0 for the first bucket (or its upper bound when that is ≤
// 0).
//
// The +Inf bucket: the highest bucket must have the upper bound +Inf (else
// NaN), it gives the total count, and a quantile falling into it is
// reported as the highest finite upper bound. A latency above the last
// finite bucket is therefore reported as that bound, never as +Inf.
//
// For q = 0 the lower bound of the first non-empty bucket is returned.
// NaN is returned for q NaN, for fewer than two buckets and for a
// histogram with no observations; -Inf for q < 0 and +Inf for q > 1. The
// buckets slice is sorted and may be modified.
func Quantile(q float64, buckets []Bucket) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(1)
	case len(buckets) == 0:
		return math.NaN()
	}
	slices.SortFunc(buckets, func(a, b Bucket) int {
		switch {
		case a.UpperBound < b.UpperBound:
			return -1
		case a.UpperBound > b.UpperBound:
			return 1
		}
		return 0
	})
	if !math.IsInf(buckets[len(buckets)-1].UpperBound, 1) {
		return math.NaN()
	}
	buckets = mergeEqualBounds(buckets)
	makeMonotonic(buckets)
	if len(buckets) < 2 {
		return math.NaN()
	}
	total := buckets[len(buckets)-1].Count
	if !(total > 0) {
		return math.NaN()
	}
	rank := q * total
	// The first bucket (not +Inf) whose cumulative count reaches the rank;
	// for q = 0 the first non-empty one (Prometheus returns NaN when the
	// first bucket is empty).
	i := sort.Search(len(buckets)-1, func(i int) bool {
		return buckets[i].Count >= rank && buckets[i].Count > 0
	})
	switch {
	case i == len(buckets)-1: // in the +Inf bucket
		return buckets[i-1].UpperBound
	case i == 0 && buckets[0].UpperBound <= 0:
		return buckets[0].UpperBound
	}
	lower, upper, inBucket := 0.0, buckets[i].UpperBound, buckets[i].Count
	if i > 0 {
		lower = buckets[i-1].UpperBound
		inBucket -= buckets[i-1].Count
		rank -= buckets[i-1].Count
	}
	return lower + (upper-lower)*(rank/inBucket)
}

// mergeEqualBounds sums the counts of buckets (sorted) with equal upper
// bounds.
func mergeEqualBounds(b []Bucket) []Bucket {
	out := b[:1]
	for _, x := range b[1:] {
		if last := &out[len(out)-1]; x.UpperBound == last.UpperBound {
			last.Count += x.Count
		} else {
			out = append(out, x)
		}
	}
	return out
}

// makeMonotonic removes float noise between adjacent counts and then any
// decrease of the cumulative counts (which a consistent histogram cannot
// have, but rates of separately scraped buckets can), as Prometheus does.
func makeMonotonic(b []Bucket) {
	prev := b[0].Count
	for i := 1; i < len(b); i++ {
		cur := b[i].Count
		if d := math.Abs(cur - prev); d != 0 && d/cur <= precisionTolerance {
			b[i].Count = prev
		} else {
			prev = cur
		}
	}
	top := b[0].Count
	for i := 1; i < len(b); i++ {
		if b[i].Count > top {
			top = b[i].Count
		} else {
			b[i].Count = top
		}
	}
}
