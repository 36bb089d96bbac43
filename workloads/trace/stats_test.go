package trace

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDescribeAt(t *testing.T) {
	tests := []struct {
		name                           string
		in                             Series
		step                           time.Duration
		bins                           int
		meanRate, cv, acf1, p2m, max2m float64
	}{
		{"constant", secs(2, 2, 2, 2), time.Second, 4, 2, 0, math.NaN(), 1, 1},
		{"alternating", secs(1, 3, 1, 3, 1, 3), time.Second, 6, 2, 0.5, -5.0 / 6, 1.5, 1.5},
		{"coarser step", secs(1, 3, 1, 3, 1, 3), 2 * time.Second, 3, 2, 0, math.NaN(), 1, 1},
		{"ramp", secs(0, 1, 2, 3, 4), time.Second, 5, 2, math.Sqrt2 / 2, 0.4, (3 + 0.96) / 2, 2},
		{"finer than the series", secs(1, 2, 3), 500 * time.Millisecond, 0, math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()},
		{"shorter than a step", secs(1, 2, 3), time.Minute, 0, math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()},
		{"all zero", secs(0, 0, 0), time.Second, 3, 0, math.NaN(), math.NaN(), math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DescribeAt(tt.in, tt.step)
			assert.Equal(t, tt.step, got.Step)
			assert.Equal(t, tt.bins, got.Bins)
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"meanRate", got.MeanRate, tt.meanRate}, {"cv", got.CV, tt.cv}, {"acf1", got.ACF1, tt.acf1}, {"peakToMean", got.PeakToMean, tt.p2m}, {"maxToMean", got.MaxToMean, tt.max2m}} {
				if math.IsNaN(c.want) {
					assert.True(t, math.IsNaN(c.got), "%s: got %v, want NaN", c.name, c.got)
				} else {
					assert.InDelta(t, c.want, c.got, 1e-9, c.name)
				}
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	// Two hours of a per-second series with a rate that doubles in hour 2.
	v := make([]float64, 7200)
	for i := range v {
		v[i] = 1
		if i >= 3600 {
			v[i] = 2
		}
	}
	st := Describe(Series{Name: "x", Step: time.Second, Values: v})
	assert.Equal(t, "x", st.Name)
	assert.Equal(t, 2*time.Hour, st.Span)
	assert.Equal(t, 10800.0, st.Total)
	assert.InDelta(t, 1.5, st.MeanRate, 1e-12)
	assert.Equal(t, 7200, st.Native.Bins)
	assert.Equal(t, 120, st.Minute.Bins)
	assert.Equal(t, 2, st.Hour.Bins)
	assert.InDelta(t, 1.0/3, st.Hour.CV, 1e-12)
	assert.True(t, math.IsNaN(st.Hour.ACF1), "two hourly bins: no lag-1 autocorrelation")
	assert.InDelta(t, 1.0/3, st.Minute.CV, 1e-12)
	assert.InDelta(t, 4.0/3, st.Minute.MaxToMean, 1e-12)
	require.Greater(t, st.Minute.ACF1, 0.9)
}
