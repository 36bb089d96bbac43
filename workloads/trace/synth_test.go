package trace

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// richParams exercises every model component.
func richParams() Params {
	return Params{
		BaseRate: 20,
		Diurnal:  []Harmonic{{Amplitude: 0.5, PeakHour: 15}, {Amplitude: 0.1, PeakHour: 3}},
		Weekly:   []Harmonic{{Amplitude: 0.3, PeakHour: 60}},
		SlowCoef: 0.8, SlowSigma: 0.1,
		FastCoef: 0.5, FastSigma: 0.1,
		Bursts: Bursts{RatePerHour: 0.2, PeriodSeconds: 3600, PhaseSeconds: 1200, Probability: 0.8,
			Magnitude: 3, HeightQuantiles: []float64{0.5, 1, 1.5}, HoldSeconds: 120, DecaySeconds: 60},
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, err := Generate(richParams(), time.Second, 6*time.Hour, 7)
	require.NoError(t, err)
	b, err := Generate(richParams(), time.Second, 6*time.Hour, 7)
	require.NoError(t, err)
	assert.Equal(t, a, b, "same seed, same series")
	c, err := Generate(richParams(), time.Second, 6*time.Hour, 8)
	require.NoError(t, err)
	assert.NotEqual(t, a.Values, c.Values, "another seed, another series")
	require.NoError(t, a.Validate())
	assert.Equal(t, 6*3600, a.Len())
	for _, v := range a.Values {
		require.Equal(t, math.Trunc(v), v, "counts are whole numbers")
	}
}

func TestGenerateStepKeepsThePath(t *testing.T) {
	// The noise and bursts use their own streams: a coarser step sees the
	// same rate path, so hourly sums agree up to Poisson noise.
	p := richParams()
	fine, err := Generate(p, time.Minute, 48*time.Hour, 3)
	require.NoError(t, err)
	coarse, err := Generate(p, time.Hour, 48*time.Hour, 3)
	require.NoError(t, err)
	hourly, err := Resample(fine, time.Hour)
	require.NoError(t, err)
	require.Equal(t, coarse.Len(), hourly.Len())
	for i := range coarse.Values {
		a, b := hourly.Values[i], coarse.Values[i]
		assert.InDelta(t, a, b, 6*math.Sqrt(a+b+1), "hour %d", i)
	}
}

func TestGenerateMean(t *testing.T) {
	tests := []struct {
		name string
		p    Params
		span time.Duration
		tol  float64 // relative
	}{
		{"constant", Params{BaseRate: 5}, 2 * time.Hour, 0.02},
		{"cycles", Params{BaseRate: 5, Diurnal: []Harmonic{{Amplitude: 0.9, PeakHour: 4}}, Weekly: []Harmonic{{Amplitude: 0.5}}}, week, 0.01},
		{"bursts", Params{BaseRate: 5, Bursts: Bursts{PeriodSeconds: 600, Probability: 1, Magnitude: 10, HoldSeconds: 60, DecaySeconds: 30}}, 24 * time.Hour, 0.01},
		{"everything", richParams(), 4 * week, 0.08},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Generate(tt.p, time.Second, tt.span, 1)
			require.NoError(t, err)
			assert.InEpsilon(t, tt.p.BaseRate, s.MeanRate(), tt.tol)
		})
	}
}

func TestModelBurstShape(t *testing.T) {
	// Bursts every 600 s of height 10 holding for 60 s: the rate is
	// (1 + 10)/norm while they hold and 1/norm otherwise, norm = 1 + 10·60/600.
	p := Params{BaseRate: 1, Bursts: Bursts{PeriodSeconds: 600, Probability: 1, Magnitude: 10, HoldSeconds: 60}}
	m := newModel(p, time.Hour, 1)
	assert.InDelta(t, 5.5*60, m.expected(0, time.Minute), 1e-9)
	assert.InDelta(t, 0.5*540, m.expected(time.Minute, 9*time.Minute), 1e-9)

	// With a decay of τ after the hold, a burst adds 10·τ·(1 − e^(−60/τ)) over
	// the next minute.
	p.Bursts.DecaySeconds = 30
	norm := 1 + 10*(60+30)/600.0
	m = newModel(p, time.Hour, 1)
	assert.InDelta(t, 11*60/norm, m.expected(0, time.Minute), 1e-9)
	assert.InDelta(t, (60+10*30*(1-math.Exp(-2)))/norm, m.expected(time.Minute, time.Minute), 1e-9)
	var total float64
	for i := range 58 {
		total += m.expected(time.Duration(i+2)*time.Minute, time.Minute)
	}
	assert.InDelta(t, 3600, total+11*60/norm+(60+10*30*(1-math.Exp(-2)))/norm, 1, "mean rate is BaseRate over whole periods")
}

func TestParamsValidate(t *testing.T) {
	require.NoError(t, richParams().Validate())
	require.NoError(t, Params{}.Validate())
	tests := []struct {
		name   string
		modify func(*Params)
		err    string
	}{
		{"negative rate", func(p *Params) { p.BaseRate = -1 }, "baseRate: -1"},
		{"nan rate", func(p *Params) { p.BaseRate = math.NaN() }, "baseRate: NaN"},
		{"amplitudes sum to 1", func(p *Params) { p.Diurnal[1].Amplitude = 0.5 }, "diurnal: sum of amplitudes: 1, want below 1"},
		{"negative amplitude", func(p *Params) { p.Weekly[0].Amplitude = -0.1 }, "weekly[0].amplitude: -0.1"},
		{"infinite peak", func(p *Params) { p.Diurnal[0].PeakHour = math.Inf(1) }, "diurnal[0].peakHour: +Inf"},
		{"unit root", func(p *Params) { p.SlowCoef = 1 }, "slowCoef: 1, want [0, 1)"},
		{"huge sigma", func(p *Params) { p.FastSigma = 4 }, "fastSigma: 4, want [0, 3]"},
		{"probability", func(p *Params) { p.Bursts.Probability = 2 }, "bursts.probability: 2"},
		{"tiny period", func(p *Params) { p.Bursts.PeriodSeconds = 0.5 }, "bursts.periodSeconds: 0.5"},
		{"one quantile", func(p *Params) { p.Bursts.HeightQuantiles = []float64{1} }, "bursts.heightQuantiles: length: 1"},
		{"decreasing quantiles", func(p *Params) { p.Bursts.HeightQuantiles = []float64{1, 0.5} }, "bursts.heightQuantiles[1]: 0.5"},
		{"zero quantiles", func(p *Params) { p.Bursts.HeightQuantiles = []float64{0, 0} }, "bursts.heightQuantiles: mean: 0"},
		{"negative hold", func(p *Params) { p.Bursts.HoldSeconds = -1 }, "bursts.holdSeconds: -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := richParams()
			tt.modify(&p)
			err := p.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
			_, err = Generate(p, time.Second, time.Hour, 1)
			assert.ErrorContains(t, err, tt.err)
		})
	}
	_, err := Generate(Params{}, 0, time.Hour, 1)
	assert.ErrorContains(t, err, "step 0s must be positive")
	_, err = Generate(Params{}, time.Hour, time.Minute, 1)
	assert.ErrorContains(t, err, "0 steps of 1h0m0s")
}

func TestPoisson(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, lambda := range []float64{0, 0.3, 4, 9.99, 10, 57, 4000} {
		const n = 20000
		var sum, sq float64
		for range n {
			k := poisson(r, lambda)
			require.GreaterOrEqual(t, k, 0.0)
			require.Equal(t, math.Trunc(k), k)
			sum += k
			sq += k * k
		}
		m := sum / n
		v := sq/n - m*m
		se := math.Sqrt(lambda/n) + 1e-9
		assert.InDelta(t, lambda, m, 5*se, "mean for λ=%v", lambda)
		assert.InDelta(t, lambda, v, 5*lambda*math.Sqrt(2.0/n)+0.02*lambda+1e-9, "variance for λ=%v", lambda)
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, c := range []struct {
		name string
		step time.Duration
		span time.Duration
	}{{"1s_1day", time.Second, day}, {"1m_4weeks", time.Minute, 4 * week}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Generate(richParams(), c.step, c.span, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
