package trace

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// arNoise is a stationary Gaussian AR(1) process x with one value per
// step, held for the step, read as the mean-one factor exp(x − Var x/2). It
// is generated as it is read, so reads must not go back in time.
type arNoise struct {
	step        time.Duration
	coef, sigma float64
	v           float64 // stationary variance of x
	r           *rand.Rand
	knot        int64 // index of the current value
	x, factor   float64
	disabled    bool
}

func newARNoise(coef, sigma float64, step time.Duration, r *rand.Rand) arNoise {
	if sigma == 0 {
		return arNoise{disabled: true}
	}
	a := arNoise{step: step, coef: coef, sigma: sigma, v: sigma * sigma / (1 - coef*coef), r: r}
	a.x = r.NormFloat64() * math.Sqrt(a.v)
	a.factor = math.Exp(a.x - a.v/2)
	return a
}

// at returns the noise factor at t, which must not be before the last t.
func (a *arNoise) at(t time.Duration) float64 {
	if a.disabled {
		return 1
	}
	for k := int64(t / a.step); a.knot < k; a.knot++ {
		a.x = a.coef*a.x + a.sigma*a.r.NormFloat64()
		a.factor = math.Exp(a.x - a.v/2)
	}
	return a.factor
}

// burst is one burst's start time and height.
type burst struct {
	at     time.Duration
	height float64
}

// model evaluates the expected counts of Params over consecutive intervals.
type model struct {
	p          Params
	slow, fast arNoise
	bursts     []burst
	hold, tau  time.Duration // burst shape; both 0 without bursts
	norm       float64       // 1 + E[B]
	// Burst state at the end of the last interval: b is the sum of the
	// decaying bursts; bursts[held:next] are holding their height.
	b          float64
	held, next int
}

func newModel(p Params, span time.Duration, seed uint64) *model {
	m := &model{p: p, norm: 1}
	m.slow = newARNoise(p.SlowCoef, p.SlowSigma, slowKnot, rand.New(rand.NewPCG(seed, streamSlow)))
	m.fast = newARNoise(p.FastCoef, p.FastSigma, fastKnot, rand.New(rand.NewPCG(seed, streamFast)))
	b := p.Bursts
	if b.mean() > 0 {
		m.hold = time.Duration(b.HoldSeconds * 1e9)
		m.tau = time.Duration(b.DecaySeconds * 1e9)
		m.norm = 1 + b.mean()
		m.bursts = burstTimes(b, span, rand.New(rand.NewPCG(seed, streamBurst)))
	}
	return m
}

// burstTimes draws the bursts of b within span, sorted by start.
func burstTimes(b Bursts, span time.Duration, r *rand.Rand) []burst {
	height := func() float64 { return b.Magnitude }
	if q := b.HeightQuantiles; len(q) >= 2 {
		scale := b.Magnitude / quantileMean(q)
		height = func() float64 {
			pos := r.Float64() * float64(len(q)-1)
			i := int(pos)
			return scale * (q[i] + (pos-float64(i))*(q[i+1]-q[i]))
		}
	}
	var out []burst
	if rate := b.RatePerHour / 3600; rate > 0 {
		for t := r.ExpFloat64() / rate; t < span.Seconds(); t += r.ExpFloat64() / rate {
			out = append(out, burst{at: time.Duration(t * 1e9), height: height()})
		}
	}
	if b.PeriodSeconds > 0 && b.Probability > 0 {
		for t := b.PhaseSeconds; t < span.Seconds(); t += b.PeriodSeconds {
			if r.Float64() < b.Probability {
				out = append(out, burst{at: time.Duration(t * 1e9), height: height()})
			}
		}
	}
	slices.SortStableFunc(out, func(x, y burst) int { return cmp.Compare(x.at, y.at) })
	return out
}

// cycle evaluates 1 + Σ harmonics at t for the base period.
func cycle(hs []Harmonic, period, t time.Duration) float64 {
	v := 1.0
	for k, h := range hs {
		v += h.Amplitude * math.Cos(2*math.Pi*float64(k+1)*(t.Hours()-h.PeakHour)/period.Hours())
	}
	return v
}

// cycles returns the deterministic daily times weekly factor at t.
func (m *model) cycles(t time.Duration) float64 {
	return cycle(m.p.Diurnal, day, t) * cycle(m.p.Weekly, week, t)
}

// expected returns the expected count in [t, t+h). Calls must cover
// consecutive intervals in order, starting at 0. The interval is split at
// minute boundaries, where the noise can change.
func (m *model) expected(t, h time.Duration) float64 {
	var sum float64
	for end := t + h; t < end; {
		next := min(end, (t/fastKnot+1)*fastKnot)
		d := next - t
		mid := t + d/2
		level := m.cycles(mid) * m.slow.at(t) * m.fast.at(t)
		sum += m.p.BaseRate * (level + m.burstMean(next, d)) / m.norm * d.Seconds()
		t = next
	}
	return sum
}

// burstMean returns the mean of B over [end−d, end) and advances the burst
// state to end.
func (m *model) burstMean(end, d time.Duration) float64 {
	if len(m.bursts) == 0 {
		return 0
	}
	start := end - d
	for m.next < len(m.bursts) && m.bursts[m.next].at < end {
		m.next++
	}
	var sum float64 // ∫B over the interval, in seconds
	for _, bu := range m.bursts[m.held:m.next] {
		sum += bu.height * max(0, min(end, bu.at+m.hold)-max(start, bu.at)).Seconds()
	}
	tau := m.tau.Seconds()
	decay := 0.0
	if tau > 0 {
		decay = math.Exp(-d.Seconds() / tau)
	}
	sum += m.b * tau * (1 - decay)
	m.b *= decay
	for ; m.held < m.next && m.bursts[m.held].at+m.hold < end; m.held++ {
		bu := m.bursts[m.held]
		if tau > 0 {
			e := math.Exp(-(end - bu.at - m.hold).Seconds() / tau)
			sum += bu.height * tau * (1 - e)
			m.b += bu.height * e
		}
	}
	return sum / d.Seconds()
}
