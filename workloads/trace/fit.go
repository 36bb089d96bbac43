package trace

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"
)

// Fit tuning constants.
const (
	// diurnalHarmonics and weeklyHarmonics are how many harmonics Fit keeps.
	diurnalHarmonics, weeklyHarmonics = 3, 2
	// maxAmplitude caps the sum of a cycle's amplitudes (rates stay positive).
	maxAmplitude = 0.95
	// maxCoef caps fitted AR(1) coefficients below 1 (stationarity).
	maxCoef = 0.995
)

// Fit estimates the Params of s (see Params for the model) from its counts
// per minute (per step when the step is longer):
//
//   - BaseRate is the mean rate.
//   - Runs of empty bins lasting at least 10 minutes in which the mean rate
//     predicts at least 20 requests are outages (recording gaps), left out of
//     everything below.
//   - The diurnal and weekly harmonics come from a least-squares fit of
//     cosines to the counts (3 daily harmonics when the series covers a day,
//     2 weekly ones when it covers a week), relative to the level without
//     bursts.
//   - The ratio z of counts to that profile is smoothed by a rolling
//     one-hour median, the level L. A bin where z/L exceeds 1 by 4 standard
//     deviations of the noise expected there (fast noise plus Poisson) and by
//     at least 3 requests starts a burst, which lasts while z/L stays 1
//     standard deviation above; bursts whose peak is less than half the level
//     are noise. Heights are the peak excess in units of the mean rate
//     (Magnitude is their mean, HeightQuantiles their deciles); for the
//     shape "hold, then decay", the pooled ratios ∫excess/peak = hold + τ and
//     ∫excess²/peak² = hold + τ/2 give HoldSeconds and DecaySeconds. If, for
//     one of the usual timer periods (5 minutes to a day), far more periods
//     than chance (6 standard deviations) have a burst starting at the same
//     phase, those bursts are periodic (PeriodSeconds, PhaseSeconds,
//     Probability = share of periods with one); the rest are Poisson with
//     RatePerHour.
//   - Outside bursts, hourly block means H of z give the slow hourly AR(1)
//     and z/H within the blocks, less the Poisson variance, the fast
//     per-minute one, both converted from the variance and lag-1
//     autocorrelation of a mean-one log-normal factor.
//
// It is an error if s is invalid, spans less than three steps of the
// analysis or has no arrivals.
func Fit(s Series) (Params, error) {
	if err := s.Validate(); err != nil {
		return Params{}, err
	}
	u := max(s.Step, time.Minute)
	c, err := Resample(s, u)
	if err != nil {
		return Params{}, fmt.Errorf("fit: %w", err)
	}
	if len(c.Values) < 3 {
		return Params{}, fmt.Errorf("fit %s: spans %v, want at least 3 steps of %v", s.label(), s.Span(), u)
	}
	cbar := mean(c.Values)
	if !(cbar > 0) {
		return Params{}, fmt.Errorf("fit %s: no arrivals", s.label())
	}
	out := outages(c.Values, slices.Repeat([]float64{cbar}, len(c.Values)), max(1, int(outageMin/u)))
	p := Params{BaseRate: s.MeanRate()}
	p.Diurnal, p.Weekly = harmonics(c, out)
	f := newFitState(c, out, cbar, p)
	f.findBursts()
	p.Bursts = f.burstParams()
	p.SlowCoef, p.SlowSigma, p.FastCoef, p.FastSigma = f.noise()
	// The cycles were measured relative to the mean with bursts; the model
	// modulates only the level, which is 1/(1 + E[B]) of it.
	p.Diurnal = capAmplitudes(p.Diurnal, 1+p.Bursts.mean())
	p.Weekly = capAmplitudes(p.Weekly, 1+p.Bursts.mean())
	return p, nil
}

// harmonics fits, by least squares over the bins not skipped, a constant
// plus diurnalHarmonics daily cosines (if c spans a day) and
// weeklyHarmonics weekly ones (if it spans a week), and returns them
// relative to the constant with their amplitudes capped.
func harmonics(c Series, skip []bool) (daily, weekly []Harmonic) {
	type term struct {
		period time.Duration
		k      int
	}
	var terms []term
	if c.Span() >= day {
		for k := 1; k <= diurnalHarmonics; k++ {
			terms = append(terms, term{day, k})
		}
	}
	if c.Span() >= week {
		for k := 1; k <= weeklyHarmonics; k++ {
			terms = append(terms, term{week, k})
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	n := 1 + 2*len(terms)
	xtx := mat.NewSymDense(n, nil)
	xty := mat.NewVecDense(n, nil)
	row := make([]float64, n)
	for i, v := range c.Values {
		if skip[i] {
			continue
		}
		t := (float64(i) + 0.5) * c.Step.Seconds()
		row[0] = 1
		for j, tm := range terms {
			w := 2 * math.Pi * float64(tm.k) / tm.period.Seconds()
			row[1+2*j], row[2+2*j] = math.Cos(w*t), math.Sin(w*t)
		}
		for a := range n {
			xty.SetVec(a, xty.AtVec(a)+row[a]*v)
			for b := a; b < n; b++ {
				xtx.SetSym(a, b, xtx.At(a, b)+row[a]*row[b])
			}
		}
	}
	var chol mat.Cholesky
	beta := mat.NewVecDense(n, nil)
	if !chol.Factorize(xtx) || chol.SolveVecTo(beta, xty) != nil || !(beta.AtVec(0) > 0) {
		return nil, nil
	}
	for j, tm := range terms {
		a, b := beta.AtVec(1+2*j), beta.AtVec(2+2*j)
		// a·cos(ωt) + b·sin(ωt) = A·cos(ω(t − peak)) with ω·peak = atan2(b, a).
		sub := tm.period.Hours() / float64(tm.k)
		peak := math.Mod(math.Atan2(b, a)/(2*math.Pi)*sub+sub, sub)
		h := Harmonic{Amplitude: math.Hypot(a, b) / beta.AtVec(0), PeakHour: peak}
		if tm.period == day {
			daily = append(daily, h)
		} else {
			weekly = append(weekly, h)
		}
	}
	return capAmplitudes(daily, 1), capAmplitudes(weekly, 1)
}

// capAmplitudes multiplies the amplitudes by f and scales them down if they
// then sum to more than maxAmplitude.
func capAmplitudes(hs []Harmonic, f float64) []Harmonic {
	var sum float64
	for i := range hs {
		hs[i].Amplitude *= f
		sum += hs[i].Amplitude
	}
	if sum > maxAmplitude {
		for i := range hs {
			hs[i].Amplitude *= maxAmplitude / sum
		}
	}
	return hs
}
