package loadgen

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScheduleValidate(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		arrivals []time.Duration
		length   time.Duration
		wantErr  string
	}{
		{"ok", []time.Duration{0, ms, ms, 5 * ms}, 10 * ms, ""},
		{"empty is ok", nil, time.Second, ""},
		{"zero length", nil, 0, "length 0s must be positive"},
		{"negative", []time.Duration{-ms}, time.Second, "arrivals[0] = -1ms is negative"},
		{"unsorted", []time.Duration{0, 2 * ms, ms}, time.Second, "arrivals[2] = 1ms is before arrivals[1] = 2ms"},
		{"past length", []time.Duration{0, time.Second}, time.Second, "arrivals[1] = 1s is not before the length 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSchedule(tt.arrivals, tt.length)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestConstant(t *testing.T) {
	s, err := Constant(250, 2*time.Second)
	require.NoError(t, err)
	require.NoError(t, s.Validate())
	require.Len(t, s.Arrivals, 500)
	assert.Equal(t, 250.0, s.Rate())
	for i := 1; i < len(s.Arrivals); i++ {
		assert.InDelta(t, 4*time.Millisecond, s.Arrivals[i]-s.Arrivals[i-1], 1)
	}

	for _, bad := range []struct {
		rate   float64
		length time.Duration
		want   string
	}{
		{0, time.Second, "rate 0 must be a positive number"},
		{math.NaN(), time.Second, "rate NaN"},
		{math.Inf(1), time.Second, "rate +Inf"},
		{10, 0, "length 0s must be positive"},
		{1e9, time.Hour, "more than the limit"},
	} {
		_, err := Constant(bad.rate, bad.length)
		assert.ErrorContains(t, err, bad.want)
	}
}

func TestPoisson(t *testing.T) {
	const rate, length = 1000.0, 20 * time.Second
	a, err := Poisson(rate, length, 7)
	require.NoError(t, err)
	require.NoError(t, a.Validate())
	n := float64(len(a.Arrivals))
	mean := rate * length.Seconds()
	assert.InDelta(t, mean, n, 5*math.Sqrt(mean), "count must be Poisson(rate·length)")

	// Inter-arrival times are exponential: mean 1/rate and CV 1.
	gaps := make([]float64, len(a.Arrivals)-1)
	for i := range gaps {
		gaps[i] = (a.Arrivals[i+1] - a.Arrivals[i]).Seconds()
	}
	var sum, sq float64
	for _, g := range gaps {
		sum += g
	}
	m := sum / float64(len(gaps))
	for _, g := range gaps {
		sq += (g - m) * (g - m)
	}
	cv := math.Sqrt(sq/float64(len(gaps))) / m
	assert.InEpsilon(t, 1/rate, m, 0.03)
	assert.InDelta(t, 1, cv, 0.03)

	b, err := Poisson(rate, length, 7)
	require.NoError(t, err)
	assert.True(t, slices.Equal(a.Arrivals, b.Arrivals), "same seed, same schedule")
	c, err := Poisson(rate, length, 8)
	require.NoError(t, err)
	assert.False(t, slices.Equal(a.Arrivals, c.Arrivals), "another seed, another schedule")
}
