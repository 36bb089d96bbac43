package trace

import (
	"math"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/internal/quantile"
)

// Scale summarises a series resampled to one step length. Statistics that
// are not defined are NaN: all of them when the step is shorter than the
// series' own step (refining invents no information) or the series spans
// less than one step; CV and PeakToMean need a positive mean and at least two
// steps; ACF1 needs three steps and some variation.
type Scale struct {
	Step time.Duration `json:"step"`
	// Bins is the number of whole steps the statistics use.
	Bins int `json:"bins"`
	// MeanRate is the mean arrival rate in requests per second.
	MeanRate float64 `json:"meanRate"`
	// CV is the coefficient of variation of the counts per step (population
	// standard deviation over mean).
	CV float64 `json:"cv"`
	// ACF1 is the lag-1 sample autocorrelation of the counts per step.
	ACF1 float64 `json:"acf1"`
	// PeakToMean is the 99th percentile of the counts per step over their
	// mean: a peak that lasts a whole step and recurs (1 % of the time),
	// robust to a single spike. MaxToMean is the largest count over the mean.
	PeakToMean float64 `json:"peakToMean"`
	MaxToMean  float64 `json:"maxToMean"`
}

// Stats describes a series at its own step, at one minute and at one hour.
type Stats struct {
	Name     string        `json:"name"`
	Step     time.Duration `json:"step"`
	Span     time.Duration `json:"span"`
	Total    float64       `json:"total"`
	MeanRate float64       `json:"meanRate"`
	Native   Scale         `json:"native"`
	Minute   Scale         `json:"minute"`
	Hour     Scale         `json:"hour"`
}

// Describe computes s's statistics (see Stats and Scale).
func Describe(s Series) Stats {
	return Stats{
		Name: s.Name, Step: s.Step, Span: s.Span(), Total: s.Total(), MeanRate: s.MeanRate(),
		Native: DescribeAt(s, s.Step),
		Minute: DescribeAt(s, time.Minute),
		Hour:   DescribeAt(s, time.Hour),
	}
}

// DescribeAt computes the statistics of s resampled to step (see Scale).
func DescribeAt(s Series, step time.Duration) Scale {
	nan := math.NaN()
	out := Scale{Step: step, MeanRate: nan, CV: nan, ACF1: nan, PeakToMean: nan, MaxToMean: nan}
	if step < s.Step {
		return out
	}
	r, err := Resample(s, step)
	if err != nil {
		return out
	}
	x := r.Values
	out.Bins = len(x)
	m := mean(x)
	out.MeanRate = m / step.Seconds()
	if len(x) >= 2 && m > 0 {
		out.CV = math.Sqrt(variance(x, m)) / m
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		out.PeakToMean = quantile.LinearSorted(sorted, peakQuantile) / m
		out.MaxToMean = sorted[len(sorted)-1] / m
	}
	out.ACF1 = acf1(x, m)
	return out
}

// peakQuantile is the quantile PeakToMean uses.
const peakQuantile = 0.99

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// variance is the population variance of x about m.
func variance(x []float64, m float64) float64 {
	var s float64
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s / float64(len(x))
}

// acf1 is the lag-1 sample autocorrelation of x about its mean m, NaN when
// x has fewer than three values or no variation.
func acf1(x []float64, m float64) float64 {
	if len(x) < 3 {
		return math.NaN()
	}
	var num, den float64
	for i, v := range x {
		d := v - m
		den += d * d
		if i > 0 {
			num += d * (x[i-1] - m)
		}
	}
	if den == 0 {
		return math.NaN()
	}
	return num / den
}
