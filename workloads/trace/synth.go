package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

const (
	day  = 24 * time.Hour
	week = 7 * day
	// fastKnot and slowKnot are the steps of the two AR(1) noise processes.
	fastKnot = time.Minute
	slowKnot = time.Hour
)

// Params describe the synthetic load model that Generate samples and Fit
// estimates. The arrival rate at time t (from the series start) is
//
//	λ(t) = BaseRate · (D(t) · W(t) · S(t) · F(t) + B(t)) / (1 + E[B])
//
// where D(t) = 1 + Σₖ Diurnal[k].Amplitude·cos(2π(k+1)(t − Diurnal[k].PeakHour)/24 h)
// is the daily cycle and W(t) the weekly one (Weekly, period 7 days); S and F
// are mean-one log-normal noise factors exp(x − Var x/2) of stationary
// Gaussian AR(1) processes x that hold each value for an hour (S, "slow") or
// a minute (F, "fast"); and B(t) is the sum of bursts (see Bursts) added
// on top, in units of the base rate. Every factor has mean one, so
// BaseRate is the expected mean rate over whole weeks. Counts per step are
// Poisson with mean ∫λ over the step.
type Params struct {
	// BaseRate is the mean arrival rate in requests per second.
	BaseRate float64 `json:"baseRate"`
	// Diurnal and Weekly are the harmonics of the daily and weekly cycles:
	// element k has period 24 h/(k+1) (7 days/(k+1)). Their amplitudes sum
	// to less than 1, so the cycles stay positive.
	Diurnal []Harmonic `json:"diurnal,omitempty"`
	Weekly  []Harmonic `json:"weekly,omitempty"`
	// SlowCoef in [0, 1) and SlowSigma >= 0 are the lag-1 coefficient and
	// innovation standard deviation of the hourly log-rate AR(1) noise.
	SlowCoef  float64 `json:"slowCoef"`
	SlowSigma float64 `json:"slowSigma"`
	// FastCoef and FastSigma are those of the per-minute log-rate noise.
	FastCoef  float64 `json:"fastCoef"`
	FastSigma float64 `json:"fastSigma"`
	// Bursts are short surges on top of the level.
	Bursts Bursts `json:"bursts"`
}

// Harmonic is one cosine term of a cycle.
type Harmonic struct {
	// Amplitude is the relative swing, >= 0.
	Amplitude float64 `json:"amplitude"`
	// PeakHour is when the term peaks, in hours after the series start.
	PeakHour float64 `json:"peakHour"`
}

// Bursts describe B(t) = Σⱼ mⱼ·k(t − tⱼ), a sum of surges of height mⱼ
// (in units of the base rate) whose shape k holds 1 for HoldSeconds and then
// decays as exp(−(s − HoldSeconds)/DecaySeconds). Bursts start at
// the times tⱼ of a Poisson process with RatePerHour, plus, when
// PeriodSeconds > 0, at PhaseSeconds + k·PeriodSeconds (k = 0, 1, ...) each
// with Probability (timer-driven surges). Heights mⱼ have mean Magnitude;
// they all equal it unless HeightQuantiles gives their distribution.
type Bursts struct {
	RatePerHour   float64 `json:"ratePerHour"`
	PeriodSeconds float64 `json:"periodSeconds,omitempty"`
	PhaseSeconds  float64 `json:"phaseSeconds,omitempty"`
	Probability   float64 `json:"probability,omitempty"`
	Magnitude     float64 `json:"magnitude"`
	// HeightQuantiles, when set, are equally spaced quantiles (from the
	// smallest to the largest height, non-decreasing, at least two) of the
	// heights' distribution up to scale: heights are drawn from the
	// piecewise-linear quantile function through them, rescaled to mean
	// Magnitude.
	HeightQuantiles []float64 `json:"heightQuantiles,omitempty"`
	HoldSeconds     float64   `json:"holdSeconds"`
	DecaySeconds    float64   `json:"decaySeconds"`
}

// perSecond is the mean number of bursts per second.
func (b Bursts) perSecond() float64 {
	r := b.RatePerHour / 3600
	if b.PeriodSeconds > 0 {
		r += b.Probability / b.PeriodSeconds
	}
	return r
}

// mean is E[B(t)], the average burst load in units of the base rate.
func (b Bursts) mean() float64 {
	return b.perSecond() * b.Magnitude * (b.HoldSeconds + b.DecaySeconds)
}

// quantileMean is the mean of the piecewise-linear quantile function
// through q (equally spaced probabilities from 0 to 1).
func quantileMean(q []float64) float64 {
	if len(q) < 2 {
		return math.NaN()
	}
	var s float64
	for i := 1; i < len(q); i++ {
		s += (q[i-1] + q[i]) / 2
	}
	return s / float64(len(q)-1)
}

// Validate reports every parameter out of range, each by its JSON name.
func (p Params) Validate() error {
	var errs []error
	check := func(ok bool, field string, v float64, want string) {
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s: %v, want %s", field, v, want))
		}
	}
	check(p.BaseRate >= 0, "baseRate", p.BaseRate, "a non-negative rate")
	for _, c := range []struct {
		name string
		hs   []Harmonic
	}{{"diurnal", p.Diurnal}, {"weekly", p.Weekly}} {
		var sum float64
		for i, h := range c.hs {
			check(h.Amplitude >= 0, fmt.Sprintf("%s[%d].amplitude", c.name, i), h.Amplitude, "non-negative")
			check(true, fmt.Sprintf("%s[%d].peakHour", c.name, i), h.PeakHour, "a finite number")
			sum += h.Amplitude
		}
		check(sum < 1, c.name+": sum of amplitudes", sum, "below 1")
	}
	check(p.SlowCoef >= 0 && p.SlowCoef < 1, "slowCoef", p.SlowCoef, "[0, 1)")
	check(p.SlowSigma >= 0 && p.SlowSigma <= 3, "slowSigma", p.SlowSigma, "[0, 3]")
	check(p.FastCoef >= 0 && p.FastCoef < 1, "fastCoef", p.FastCoef, "[0, 1)")
	check(p.FastSigma >= 0 && p.FastSigma <= 3, "fastSigma", p.FastSigma, "[0, 3]")
	b := p.Bursts
	check(b.RatePerHour >= 0, "bursts.ratePerHour", b.RatePerHour, "a non-negative rate")
	check(b.PeriodSeconds == 0 || b.PeriodSeconds >= 1, "bursts.periodSeconds", b.PeriodSeconds, "0 or at least 1")
	check(b.PhaseSeconds >= 0, "bursts.phaseSeconds", b.PhaseSeconds, "non-negative")
	check(b.Probability >= 0 && b.Probability <= 1, "bursts.probability", b.Probability, "[0, 1]")
	check(b.Magnitude >= 0, "bursts.magnitude", b.Magnitude, "non-negative")
	if q := b.HeightQuantiles; len(q) > 0 {
		check(len(q) >= 2, "bursts.heightQuantiles: length", float64(len(q)), "at least 2")
		for i, v := range q {
			check(v >= 0 && (i == 0 || v >= q[i-1]), fmt.Sprintf("bursts.heightQuantiles[%d]", i), v, "non-negative and not below the previous quantile")
		}
		check(quantileMean(q) > 0, "bursts.heightQuantiles: mean", quantileMean(q), "positive")
	}
	check(b.HoldSeconds >= 0, "bursts.holdSeconds", b.HoldSeconds, "non-negative")
	check(b.DecaySeconds >= 0, "bursts.decaySeconds", b.DecaySeconds, "non-negative")
	if len(errs) > 0 {
		return fmt.Errorf("invalid trace model parameters: %w", errors.Join(errs...))
	}
	return nil
}

// Seed streams: each model component draws from its own PCG stream so that,
// for example, changing the step does not change the noise path.
const (
	streamSlow  uint64 = 0x510e
	streamFast  uint64 = 0xfa57
	streamBurst uint64 = 0xb057
	streamCount uint64 = 0xc047
)

// Generate samples length (rounded down to whole steps) of the model p at
// the given step, reproducibly from seed: the same arguments always give the
// same series. Values are Poisson counts per step.
func Generate(p Params, step, length time.Duration, seed uint64) (Series, error) {
	if err := p.Validate(); err != nil {
		return Series{}, err
	}
	if step <= 0 {
		return Series{}, fmt.Errorf("generate: step %v must be positive", step)
	}
	n := int64(length / step)
	if n <= 0 || n > maxBins {
		return Series{}, fmt.Errorf("generate: length %v is %d steps of %v, want 1 to %d", length, n, step, maxBins)
	}
	m := newModel(p, time.Duration(n)*step, seed)
	counts := rand.New(rand.NewPCG(seed, streamCount))
	out := Series{Name: fmt.Sprintf("synthetic(seed=%d)", seed), Step: step, Values: make([]float64, n)}
	for i := range out.Values {
		out.Values[i] = poisson(counts, m.expected(time.Duration(i)*step, step))
	}
	return out, nil
}

// Synthetic is the project's synthetic load model at a mean of rate
// requests/s: two daily harmonics (peaks at 14:00 and 09:00), slow and fast
// log-normal noise, and two bursts an hour. It stands in for the real
// traces wherever they are absent.
func Synthetic(rate float64) Params {
	return Params{
		BaseRate:  rate,
		Diurnal:   []Harmonic{{Amplitude: 0.4, PeakHour: 14}, {Amplitude: 0.1, PeakHour: 9}},
		SlowCoef:  0.8,
		SlowSigma: 0.15,
		FastCoef:  0.6,
		FastSigma: 0.1,
		Bursts:    Bursts{RatePerHour: 2, Magnitude: 1, HoldSeconds: 20, DecaySeconds: 60},
	}
}
