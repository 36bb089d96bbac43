package trace

import (
	"math"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/internal/quantile"
)

// Burst and outage detection thresholds (see Fit).
const (
	burstZ, tailZ  = 4.0, 1.0
	burstMinExcess = 3.0
	burstMinHeight = 0.5
	outageMin      = 10 * time.Minute
	outageExpected = 20.0
	// maxBurstShare caps the share of the load that bursts carry.
	maxBurstShare = 0.95
	// heightQuantiles is how many quantiles describe burst heights.
	heightQuantiles = 11
	// periodicMinZ is how many standard deviations above chance the
	// periods with an aligned burst must be to call bursts periodic.
	periodicMinZ = 6.0
)

// timerPeriods are the periods Fit tries for periodic bursts.
var timerPeriods = []time.Duration{
	5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour, 8 * time.Hour, 12 * time.Hour, day,
}

// fitState holds the intermediate series of Fit at its analysis step u.
type fitState struct {
	u     time.Duration
	cbar  float64   // mean count per step
	c     []float64 // counts per step
	mu    []float64 // deterministic profile: expected counts per step
	out   []bool    // bins inside an outage
	level []float64 // rolling median of c/mu, floored at half a request
	r     []float64 // c / (mu·level)
	burst []bool    // bins inside a detected burst
	fast  float64   // robust variance of the fast noise, for thresholds
	// Per burst, with x the excess count over the level in units of cbar:
	// first bin, ∫x dt and ∫x² dt in seconds, and max x.
	starts            []int
	areas, sqs, peaks []float64
}

func newFitState(c Series, out []bool, cbar float64, p Params) *fitState {
	n := len(c.Values)
	f := &fitState{u: c.Step, cbar: cbar, c: c.Values, mu: make([]float64, n), r: make([]float64, n), burst: make([]bool, n)}
	m := model{p: p}
	z := make([]float64, n)
	for k, v := range c.Values {
		f.mu[k] = cbar * m.cycles(time.Duration(k)*c.Step+c.Step/2)
		z[k] = v / f.mu[k]
	}
	f.out = out
	f.level = rollingMedian(z, f.out, max(int(time.Hour/c.Step)/2, 1))
	var rs, pois []float64
	for k := range z {
		if f.out[k] {
			continue
		}
		f.level[k] = max(f.level[k], 0.5/f.mu[k])
		f.r[k] = z[k] / f.level[k]
		rs = append(rs, f.r[k])
		pois = append(pois, 1/(f.level[k]*f.mu[k]))
	}
	if len(rs) > 0 {
		med := quantile.Median(rs)
		for i, v := range rs {
			rs[i] = math.Abs(v - med)
		}
		robust := 1.4826 * quantile.Median(rs)
		f.fast = max(0, robust*robust-quantile.Median(pois))
	}
	return f
}

// outages marks runs of at least minRun empty bins in which mu expects at
// least outageExpected requests.
func outages(c, mu []float64, minRun int) []bool {
	out := make([]bool, len(c))
	for k := 0; k < len(c); {
		if c[k] != 0 {
			k++
			continue
		}
		j, want := k, 0.0
		for ; j < len(c) && c[j] == 0; j++ {
			want += mu[j]
		}
		if j-k >= minRun && want >= outageExpected {
			for i := k; i < j; i++ {
				out[i] = true
			}
		}
		k = j
	}
	return out
}

// sd is the standard deviation of r at bin k expected without bursts.
func (f *fitState) sd(k int) float64 {
	return math.Sqrt(f.fast + 1/(f.level[k]*f.mu[k]))
}

// findBursts marks the bursts (see Fit).
func (f *fitState) findBursts() {
	for k := 0; k < len(f.r); {
		if f.out[k] || f.r[k]-1 <= burstZ*f.sd(k) || f.c[k]-f.level[k]*f.mu[k] < burstMinExcess {
			k++
			continue
		}
		start := k
		var area, sq, peak float64
		for ; k < len(f.r) && !f.out[k] && f.r[k]-1 > tailZ*f.sd(k); k++ {
			x := (f.r[k] - 1) * f.level[k] * f.mu[k] / f.cbar // in units of the mean
			area += x * f.u.Seconds()
			sq += x * x * f.u.Seconds()
			peak = max(peak, x)
		}
		if peak < burstMinHeight*f.level[start]*f.mu[start]/f.cbar {
			continue
		}
		for i := start; i < k; i++ {
			f.burst[i] = true
		}
		f.starts = append(f.starts, start)
		f.areas = append(f.areas, area)
		f.sqs = append(f.sqs, sq)
		f.peaks = append(f.peaks, peak)
	}
}

// burstParams estimates Bursts from the detected bursts. Heights are the
// peaks P (mean and deciles). For the shape "hold, then decay with time
// constant τ", ∫x dt/P = hold + τ and ∫x² dt/P² = hold + τ/2; pooled over
// bursts these give hold and τ.
func (f *fitState) burstParams() Bursts {
	if len(f.areas) == 0 {
		return Bursts{}
	}
	pm := mean(f.peaks)
	var p2 float64
	for _, p := range f.peaks {
		p2 += p * p
	}
	p2 /= float64(len(f.peaks))
	length := mean(f.areas) / pm // hold + τ
	half := mean(f.sqs) / p2     // hold + τ/2
	tau := min(max(2*(length-half), 0), length)
	b := Bursts{
		Magnitude:       pm,
		HeightQuantiles: quantiles(f.peaks, heightQuantiles, pm),
		HoldSeconds:     length - tau,
		DecaySeconds:    tau,
	}
	span := time.Duration(len(f.c)) * f.u
	periodic := f.periodic(&b, span)
	b.RatePerHour = float64(len(f.starts)-periodic) / span.Hours()
	// Heights were measured in units of the observed mean rate, bursts
	// included; the model divides by 1 + E[B], so scale them up to match.
	share := min(b.mean(), maxBurstShare)
	b.Magnitude /= 1 - share
	return b
}

// periodic looks for the timer period whose best phase has the most
// significant excess of periods with a burst start (within one bin), sets
// b's period, phase and probability if one passes periodicMinZ and returns
// how many bursts it explains.
func (f *fitState) periodic(b *Bursts, span time.Duration) int {
	rate := float64(len(f.starts)) / span.Seconds()
	chance := 1 - math.Exp(-rate*3*f.u.Seconds()) // P(a start in a 3-bin window)
	bestZ, bestHits := periodicMinZ, 0
	for _, period := range timerPeriods {
		per := int(period / f.u)
		periods := int(span / period)
		if period%f.u != 0 || per < 4 || periods < 4 {
			continue
		}
		// seen[i*per+ph] marks a burst start at phase ph in period i.
		seen := make([]bool, len(f.c))
		counts := make([]int, per)
		for _, s := range f.starts {
			seen[s] = true
		}
		for ph := range counts {
			for i := range periods {
				for d := -1; d <= 1; d++ {
					if at := i*per + (ph+d+per)%per; seen[at] {
						counts[ph]++
						break
					}
				}
			}
		}
		ph := 0
		for i, n := range counts {
			if n > counts[ph] {
				ph = i
			}
		}
		e := float64(periods) * chance
		z := (float64(counts[ph]) - e) / math.Sqrt(e*(1-chance)+1e-9)
		if z > bestZ && counts[ph] >= 4 {
			bestZ, bestHits = z, counts[ph]
			b.PeriodSeconds = period.Seconds()
			b.PhaseSeconds = (time.Duration(ph) * f.u).Seconds()
			b.Probability = float64(counts[ph]) / float64(periods)
		}
	}
	return bestHits
}

// noise estimates the two AR(1) noises from z = c/mu outside bursts and
// outages, split as the model does: the slow noise from the hourly block
// means H of z, the fast noise from z/H within the blocks, less the Poisson
// variance 1/(H·mu).
func (f *fitState) noise() (slowCoef, slowSigma, fastCoef, fastSigma float64) {
	g := max(1, int(slowKnot/f.u))
	blocks := make([]float64, (len(f.c)+g-1)/g)
	for b := range blocks {
		var sum float64
		var n int
		for k := b * g; k < min((b+1)*g, len(f.c)); k++ {
			if !f.burst[k] && !f.out[k] {
				sum += f.c[k] / f.mu[k]
				n++
			}
		}
		blocks[b] = math.NaN()
		if n > 0 && 2*n >= min(g, len(f.c)-b*g) {
			blocks[b] = sum / float64(n)
		}
	}
	if m, v, cov := moments(blocks); v > 0 {
		slowCoef, slowSigma = logNormalAR(v/(m*m), cov/v)
		slowCoef, slowSigma = perKnot(slowCoef, slowSigma, time.Duration(g)*f.u, slowKnot)
	}
	x := make([]float64, len(f.c))
	var pois float64
	var n int
	for k := range x {
		h := blocks[k/g]
		if f.burst[k] || f.out[k] || !(h > 0) {
			x[k] = math.NaN()
			continue
		}
		x[k] = f.c[k] / f.mu[k] / h
		pois += 1 / (h * f.mu[k])
		n++
	}
	if m, v, cov := moments(x); v-pois/float64(n) > 0 {
		v -= pois / float64(n)
		fastCoef, fastSigma = logNormalAR(v/(m*m), cov/v)
		fastCoef, fastSigma = perKnot(fastCoef, fastSigma, f.u, fastKnot)
	}
	return slowCoef, slowSigma, fastCoef, fastSigma
}

// moments returns the mean, variance and lag-1 autocovariance of x,
// skipping NaNs (and lag pairs with a NaN); NaNs when fewer than 3 values.
func moments(x []float64) (m, v, cov float64) {
	var n, pairs int
	for _, a := range x {
		if !math.IsNaN(a) {
			m += a
			n++
		}
	}
	if n < 3 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	m /= float64(n)
	for i, a := range x {
		if math.IsNaN(a) {
			continue
		}
		v += (a - m) * (a - m)
		if i > 0 && !math.IsNaN(x[i-1]) {
			cov += (a - m) * (x[i-1] - m)
			pairs++
		}
	}
	v /= float64(n)
	if pairs == 0 {
		return m, v, 0
	}
	return m, v, cov / float64(pairs)
}

// logNormalAR returns the AR(1) coefficient and innovation deviation of a
// Gaussian x whose mean-one factor exp(x − Var x/2) has relative variance
// relVar and lag-1 autocorrelation rho.
func logNormalAR(relVar, rho float64) (coef, sigma float64) {
	vx := min(math.Log1p(relVar), 4)
	rho = max(0, min(rho, 1))
	coef = max(0, min(math.Log1p(rho*math.Expm1(vx))/vx, maxCoef))
	return coef, math.Sqrt(vx * (1 - coef*coef))
}

// perKnot converts an AR(1) observed at step obs to one updated every knot,
// keeping its stationary variance and correlation time.
func perKnot(coef, sigma float64, obs, knot time.Duration) (float64, float64) {
	if obs == knot || coef == 0 {
		return coef, sigma
	}
	v := sigma * sigma / (1 - coef*coef)
	c := min(math.Pow(coef, float64(knot)/float64(obs)), maxCoef)
	return c, math.Sqrt(v * (1 - c*c))
}

// rollingMedian returns, for every k not skipped, the median of the values
// not skipped in the window [k−h, k+h] clamped to x (NaN for skipped k), in
// O(n·h) by keeping the window sorted.
func rollingMedian(x []float64, skip []bool, h int) []float64 {
	out := make([]float64, len(x))
	win := make([]float64, 0, 2*h+1)
	add := func(j int) {
		if j >= 0 && j < len(x) && !skip[j] {
			i, _ := slices.BinarySearch(win, x[j])
			win = slices.Insert(win, i, x[j])
		}
	}
	remove := func(j int) {
		if j >= 0 && j < len(x) && !skip[j] {
			i, _ := slices.BinarySearch(win, x[j])
			win = slices.Delete(win, i, i+1)
		}
	}
	for j := range h {
		add(j)
	}
	for k := range x {
		add(k + h)
		remove(k - h - 1)
		if skip[k] {
			out[k] = math.NaN()
		} else {
			out[k] = quantile.MedianSorted(win)
		}
	}
	return out
}

// quantiles returns n equally spaced quantiles of x (from min to max, by
// linear interpolation of the order statistics) divided by scale, rounded
// to 3 decimals; nil for fewer than 2 values.
func quantiles(x []float64, n int, scale float64) []float64 {
	if len(x) < 2 {
		return nil
	}
	s := slices.Clone(x)
	slices.Sort(s)
	out := make([]float64, n)
	for i := range out {
		v := quantile.LinearSorted(s, float64(i)/float64(n-1))
		out[i] = math.Round(v/scale*1000) / 1000
	}
	return out
}
