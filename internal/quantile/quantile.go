// Package quantile holds the project's order statistics of a sample: the
// median, linearly interpolated quantiles and nearest-rank quantiles, each
// with one definition for every caller. None of them modifies its input;
// the *Sorted forms take an ascending slice and do not check it. An empty
// sample has no quantile: the functions return NaN (NearestRankIndex, -1).
// A NaN in the sample makes the result NaN only where it is picked or
// interpolated; sort with slices.Sort, which puts NaNs first.
package quantile

import (
	"math"
	"slices"
)

// Median is the middle value of x, or the mean of the two middle values
// when len(x) is even; NaN for an empty x.
func Median(x []float64) float64 {
	return MedianSorted(sorted(x))
}

// MedianSorted is Median of an ascending slice.
func MedianSorted(s []float64) float64 {
	n := len(s)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Linear is the q-quantile of x (q in [0, 1]) by linear interpolation
// between the closest ranks, at position q·(n−1) of the sorted sample:
// Hyndman and Fan's type 7, the default of R and NumPy. gonum's
// stat.Quantile with stat.LinInterp is another definition (type 4, at
// position q·n), so it is not used here. Linear(x, 0) is the minimum and
// Linear(x, 1) the maximum; NaN for an empty x. At q = 0.5 it equals
// Median up to rounding (a + (b−a)/2 against (a+b)/2).
func Linear(x []float64, q float64) float64 {
	return LinearSorted(sorted(x), q)
}

// LinearSorted is Linear of an ascending slice.
func LinearSorted(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	lo = min(max(lo, 0), len(s)-1)
	hi := min(lo+1, len(s)-1)
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

// NearestRank is the smallest value of x with at least q·n of the n values
// at or below it (q in [0, 1]; the first value for q = 0): Hyndman and
// Fan's type 1, gonum's stat.Quantile with stat.Empirical. It is always a
// value of the sample. NaN for an empty x.
func NearestRank(x []float64, q float64) float64 {
	s := sorted(x)
	i := NearestRankIndex(len(s), q)
	if i < 0 {
		return math.NaN()
	}
	return s[i]
}

// NearestRankIndex is the index in an ascending slice of n values of its
// nearest-rank q-quantile (NearestRank), for samples of any ordered type
// (durations, say); -1 when n is 0.
func NearestRankIndex(n int, q float64) int {
	if n == 0 {
		return -1
	}
	return min(max(int(math.Ceil(q*float64(n)))-1, 0), n-1)
}

func sorted(x []float64) []float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s
}
