package study

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Estimate is a figure with its percentile-bootstrap confidence interval
// [Lo, Hi] at Level, over N observations.
type Estimate struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	N     int     `json:"n"`
	Level float64 `json:"level"`
}

func (e Estimate) String() string {
	if e.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%s [%s, %s]", num(e.Value), num(e.Lo), num(e.Hi))
}

// num prints a figure with three significant digits.
func num(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.3g", v)
}

// Bootstrap configures the intervals: Level (e.g. 0.95), Resamples, and
// the source of the resampling (seeded: the same figures give the same
// interval).
type Bootstrap struct {
	Level     float64
	Resamples int
	Seed      uint64
}

// DefaultBootstrap is a 95 % interval from 2000 resamples.
func DefaultBootstrap() Bootstrap { return Bootstrap{Level: 0.95, Resamples: 2000, Seed: 1} }

func (b Bootstrap) validate() error {
	if !(b.Level > 0 && b.Level < 1) {
		return fmt.Errorf("study: bootstrap level %g outside (0, 1)", b.Level)
	}
	if b.Resamples < 100 {
		return fmt.Errorf("study: %d bootstrap resamples: at least 100", b.Resamples)
	}
	return nil
}

func (b Bootstrap) rand(salt uint64) *rand.Rand { return rand.New(rand.NewPCG(b.Seed, salt)) }

// interval is the percentile interval of the resampled statistics.
func (b Bootstrap) interval(stats []float64) (lo, hi float64) {
	slices.Sort(stats)
	q := func(p float64) float64 {
		// Linear interpolation between order statistics.
		x := p * float64(len(stats)-1)
		i := int(math.Floor(x))
		if i >= len(stats)-1 {
			return stats[len(stats)-1]
		}
		f, a, b := x-float64(i), stats[i], stats[i+1]
		switch {
		case f == 0 || a == b:
			return a
		case math.IsInf(a, 0) || math.IsInf(b, 0):
			// No interpolation towards an infinite tail: the nearer one.
			if f < 0.5 {
				return a
			}
			return b
		}
		return a + f*(b-a)
	}
	return q((1 - b.Level) / 2), q((1 + b.Level) / 2)
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// ErrNoData is returned for an estimate of no observations.
var ErrNoData = errors.New("study: no observations")

// Mean is the mean of xs with its bootstrap interval. NaN observations
// are refused (a missing figure must be dropped, or counted, explicitly).
func (b Bootstrap) Mean(xs []float64) (Estimate, error) {
	if err := b.validate(); err != nil {
		return Estimate{}, err
	}
	if len(xs) == 0 {
		return Estimate{}, ErrNoData
	}
	if i := slices.IndexFunc(xs, math.IsNaN); i >= 0 {
		return Estimate{}, fmt.Errorf("study: observation %d is NaN", i)
	}
	r := b.rand(0x3EA)
	stats := make([]float64, b.Resamples)
	for k := range stats {
		var s float64
		for range xs {
			s += xs[r.IntN(len(xs))]
		}
		stats[k] = s / float64(len(xs))
	}
	lo, hi := b.interval(stats)
	return Estimate{Value: mean(xs), Lo: lo, Hi: hi, N: len(xs), Level: b.Level}, nil
}

// Ratio is mean(num)/mean(den), the way the paper states its ratios
// ("5.5× faster": TL's mean episodes over AWARE's), with its bootstrap
// interval. Paired observations (num[i] and den[i] from the same app and
// seed) are resampled together, keeping what the two arms share; unpaired
// ones are resampled each on its own.
func (b Bootstrap) Ratio(num, den []float64, paired bool) (Estimate, error) {
	if err := b.validate(); err != nil {
		return Estimate{}, err
	}
	if len(num) == 0 || len(den) == 0 {
		return Estimate{}, ErrNoData
	}
	if paired && len(num) != len(den) {
		return Estimate{}, fmt.Errorf("study: paired ratio of %d and %d observations", len(num), len(den))
	}
	for _, xs := range [][]float64{num, den} {
		if i := slices.IndexFunc(xs, math.IsNaN); i >= 0 {
			return Estimate{}, fmt.Errorf("study: observation %d is NaN", i)
		}
	}
	d := mean(den)
	if d == 0 {
		return Estimate{}, errors.New("study: ratio over a zero mean")
	}
	r := b.rand(0x4A7)
	stats := make([]float64, 0, b.Resamples)
	for range b.Resamples {
		var sn, sd float64
		if paired {
			for range num {
				i := r.IntN(len(num))
				sn += num[i]
				sd += den[i]
			}
		} else {
			for range num {
				sn += num[r.IntN(len(num))]
			}
			for range den {
				sd += den[r.IntN(len(den))]
			}
			sn, sd = sn/float64(len(num)), sd/float64(len(den))
		}
		if sd != 0 {
			stats = append(stats, sn/sd)
		}
	}
	if len(stats) < b.Resamples/2 {
		return Estimate{Value: mean(num) / d, Lo: math.NaN(), Hi: math.NaN(), N: len(num), Level: b.Level}, nil
	}
	lo, hi := b.interval(stats)
	return Estimate{Value: mean(num) / d, Lo: lo, Hi: hi, N: len(num), Level: b.Level}, nil
}
