package trace

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// angleDiff is the distance between two times of a cycle of period hours.
func angleDiff(a, b, period float64) float64 {
	d := math.Mod(math.Abs(a-b), period)
	return min(d, period-d)
}

func TestFitRecoversKnownParameters(t *testing.T) {
	want := Params{
		BaseRate: 30,
		Diurnal:  []Harmonic{{Amplitude: 0.5, PeakHour: 15}},
		Weekly:   []Harmonic{{Amplitude: 0.3, PeakHour: 60}},
		SlowCoef: 0.8, SlowSigma: 0.15,
		FastCoef: 0.6, FastSigma: 0.1,
		Bursts: Bursts{PeriodSeconds: 3600, PhaseSeconds: 1200, Probability: 0.8,
			Magnitude: 3, HoldSeconds: 180, DecaySeconds: 60},
	}
	s, err := Generate(want, time.Minute, 4*week, 11)
	require.NoError(t, err)
	got, err := Fit(s)
	require.NoError(t, err)

	assert.InEpsilon(t, s.MeanRate(), got.BaseRate, 1e-9)
	require.Len(t, got.Diurnal, diurnalHarmonics)
	require.Len(t, got.Weekly, weeklyHarmonics)
	assert.InDelta(t, 0.5, got.Diurnal[0].Amplitude, 0.06)
	assert.Less(t, angleDiff(15, got.Diurnal[0].PeakHour, 24), 0.5)
	assert.Less(t, got.Diurnal[1].Amplitude, 0.06, "no second daily harmonic in the model")
	assert.InDelta(t, 0.3, got.Weekly[0].Amplitude, 0.08)
	assert.Less(t, angleDiff(60, got.Weekly[0].PeakHour, 168), 6.0)

	b := got.Bursts
	assert.Equal(t, 3600.0, b.PeriodSeconds)
	assert.InDelta(t, 1200, b.PhaseSeconds, 60)
	assert.InDelta(t, 0.8, b.Probability, 0.1)
	assert.Less(t, b.RatePerHour, 0.05, "hardly any bursts outside the timer")
	assert.InEpsilon(t, 3, b.Magnitude, 0.3)
	assert.InDelta(t, 240, b.HoldSeconds+b.DecaySeconds, 80, "burst length")

	assert.InDelta(t, 0.8, got.SlowCoef, 0.2)
	assert.InEpsilon(t, 0.15, got.SlowSigma, 0.4)
	assert.InDelta(t, 0.6, got.FastCoef, 0.2)
	assert.InEpsilon(t, 0.1, got.FastSigma, 0.4)
	require.NoError(t, got.Validate())
}

func TestFitWithoutCycles(t *testing.T) {
	// Less than a day: no harmonics; Poisson counts only: no noise, no bursts.
	s, err := Generate(Params{BaseRate: 50}, time.Second, 6*time.Hour, 5)
	require.NoError(t, err)
	p, err := Fit(s)
	require.NoError(t, err)
	assert.Empty(t, p.Diurnal)
	assert.Empty(t, p.Weekly)
	assert.Less(t, p.FastSigma, 0.03)
	assert.Less(t, p.SlowSigma, 0.05)
	assert.Zero(t, p.Bursts.RatePerHour+p.Bursts.Probability)
	require.NoError(t, p.Validate())
}

func TestFitOutage(t *testing.T) {
	// An outage (no data for two hours) must not be read as noise or bursts.
	s, err := Generate(Params{BaseRate: 10}, time.Minute, 2*day, 2)
	require.NoError(t, err)
	for i := 600; i < 720; i++ {
		s.Values[i] = 0
	}
	p, err := Fit(s)
	require.NoError(t, err)
	assert.Less(t, p.FastSigma, 0.05)
	assert.Less(t, p.SlowSigma, 0.05)
}

func TestFitErrors(t *testing.T) {
	_, err := Fit(Series{Name: "z", Step: time.Second, Values: make([]float64, 600)})
	assert.ErrorContains(t, err, `fit "z": no arrivals`)
	_, err = Fit(secs(1, 2, 3))
	assert.ErrorContains(t, err, "less than one step of 1m0s")
	_, err = Fit(Series{Step: time.Minute, Values: []float64{1, 2}})
	assert.ErrorContains(t, err, "want at least 3 steps")
	_, err = Fit(Series{})
	assert.ErrorContains(t, err, "step 0s must be positive")
}

func TestHarmonics(t *testing.T) {
	// Exact cosines at one-minute steps over eight days, with a gap: least
	// squares recovers them exactly.
	v := make([]float64, 8*1440)
	skip := make([]bool, len(v))
	for k := range v {
		h := (float64(k) + 0.5) / 60
		v[k] = 10 * (1 + 0.4*math.Cos(2*math.Pi*(h-9)/24) + 0.2*math.Cos(2*math.Pi*2*(h-1)/24) + 0.1*math.Cos(2*math.Pi*(h-100)/168))
		skip[k] = k >= 2000 && k < 2500
		if skip[k] {
			v[k] = 0 // an outage, ignored
		}
	}
	daily, weekly := harmonics(Series{Step: time.Minute, Values: v}, skip)
	require.Len(t, daily, 3)
	require.Len(t, weekly, 2)
	assert.InDelta(t, 0.4, daily[0].Amplitude, 1e-9)
	assert.InDelta(t, 9, daily[0].PeakHour, 1e-6)
	assert.InDelta(t, 0.2, daily[1].Amplitude, 1e-9)
	assert.InDelta(t, 1, daily[1].PeakHour, 1e-6)
	assert.InDelta(t, 0, daily[2].Amplitude, 1e-9)
	assert.InDelta(t, 0.1, weekly[0].Amplitude, 1e-9)
	assert.InDelta(t, 100, weekly[0].PeakHour, 1e-6)
	assert.InDelta(t, 0, weekly[1].Amplitude, 1e-9)

	daily, weekly = harmonics(Series{Step: time.Minute, Values: v[:1440]}, skip[:1440])
	assert.Len(t, daily, 3)
	assert.Nil(t, weekly, "less than a week")
	daily, _ = harmonics(Series{Step: time.Minute, Values: v[:1000]}, skip[:1000])
	assert.Nil(t, daily, "less than a day")
}

func TestRollingMedian(t *testing.T) {
	x := []float64{5, 1, 4, 2, 3, 9, 0}
	skip := []bool{false, false, false, false, false, true, false}
	got := rollingMedian(x, skip, 1)
	want := []float64{3, 4, 2, 3, 2.5, math.NaN(), 0}
	for i := range want {
		if math.IsNaN(want[i]) {
			assert.True(t, math.IsNaN(got[i]))
			continue
		}
		assert.Equal(t, want[i], got[i], "k=%d", i)
	}
}
