package trace

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func secs(v ...float64) Series { return Series{Name: "s", Step: time.Second, Values: v} }

func TestResample(t *testing.T) {
	tests := []struct {
		name string
		in   Series
		step time.Duration
		want []float64
	}{
		{"same step", secs(1, 2, 3), time.Second, []float64{1, 2, 3}},
		{"coarsen sums", secs(1, 2, 3, 4, 5, 6), 3 * time.Second, []float64{6, 15}},
		{"coarsen drops partial tail", secs(1, 2, 3, 4, 5), 2 * time.Second, []float64{3, 7}},
		{"refine splits evenly", secs(4, 2), 500 * time.Millisecond, []float64{2, 2, 1, 1}},
		{"uneven ratio", secs(3, 3, 3, 3), 1500 * time.Millisecond, []float64{4.5, 4.5}},
		{"uneven ratio, partial tail", secs(2, 4, 6), 2500 * time.Millisecond, []float64{2 + 4 + 3}},
		{"refine uneven", Series{Step: 3 * time.Second, Values: []float64{6, 3}}, 2 * time.Second, []float64{4, 2 + 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resample(tt.in, tt.step)
			require.NoError(t, err)
			assert.Equal(t, tt.step, got.Step)
			assert.InDeltaSlice(t, tt.want, got.Values, 1e-12)
			assert.Equal(t, tt.in.Name, got.Name)
		})
	}
	t.Run("total preserved when the span divides", func(t *testing.T) {
		in := secs(1, 7, 0, 3, 9, 2, 4, 4, 1, 0, 5, 6)
		for _, step := range []time.Duration{250 * time.Millisecond, 2 * time.Second, 3 * time.Second, 4 * time.Second, 1200 * time.Millisecond} {
			got, err := Resample(in, step)
			require.NoError(t, err)
			assert.InDelta(t, in.Total(), got.Total(), 1e-9, "step %v", step)
			assert.Equal(t, in.Span(), got.Span())
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, err := Resample(secs(1), 0)
		assert.ErrorContains(t, err, "step 0s must be positive")
		_, err = Resample(secs(1, 2), 3*time.Second)
		assert.ErrorContains(t, err, `resample "s": spans 2s, less than one step of 3s`)
		_, err = Resample(secs(1, -2), time.Second)
		assert.ErrorContains(t, err, `series "s": value 1 (at 1s) is -2`)
	})
}

func TestNormalizeAndScale(t *testing.T) {
	in := secs(1, 3, 0, 4)
	n, err := Normalize(in)
	require.NoError(t, err)
	assert.InDelta(t, 1, mean(n.Values), 1e-12)
	assert.InDeltaSlice(t, []float64{0.5, 1.5, 0, 2}, n.Values, 1e-12)
	assert.Equal(t, []float64{1, 3, 0, 4}, in.Values, "input unchanged")

	m := Series{Step: 10 * time.Second, Values: []float64{10, 30}}
	sc, err := ScaleToMean(m, 5)
	require.NoError(t, err)
	assert.InDelta(t, 5, sc.MeanRate(), 1e-12)
	assert.InDeltaSlice(t, []float64{25, 75}, sc.Values, 1e-12)

	_, err = Normalize(secs(0, 0))
	assert.ErrorContains(t, err, "mean is 0")
	_, err = ScaleToMean(secs(0, 0), 1)
	assert.ErrorContains(t, err, "mean rate is 0")
	_, err = ScaleToMean(secs(1), math.NaN())
	assert.ErrorContains(t, err, "target rate NaN")
	_, err = ScaleToMean(secs(1), -1)
	assert.ErrorContains(t, err, "target rate -1")
}

func TestWindow(t *testing.T) {
	in := secs(0, 1, 2, 3, 4, 5)
	got, err := Window(in, 2*time.Second, 3*time.Second)
	require.NoError(t, err)
	assert.Equal(t, []float64{2, 3, 4}, got.Values)
	got.Values[0] = 99
	assert.Equal(t, 2.0, in.Values[2], "window copies")
	got, err = Window(in, 0, in.Span())
	require.NoError(t, err)
	assert.Equal(t, in.Values, got.Values)

	bad := []struct {
		start, length time.Duration
		err           string
	}{
		{-time.Second, time.Second, "start -1s is not a non-negative multiple"},
		{500 * time.Millisecond, time.Second, "start 500ms is not"},
		{0, 1500 * time.Millisecond, "length 1.5s is not a positive multiple"},
		{0, 0, "length 0s is not"},
		{5 * time.Second, 2 * time.Second, "[5s, 7s) is beyond the series' span 6s"},
		{7 * time.Second, time.Second, "beyond"},
	}
	for _, b := range bad {
		_, err := Window(in, b.start, b.length)
		assert.ErrorContains(t, err, b.err)
	}
}

func TestConcat(t *testing.T) {
	got, err := Concat("ab", secs(1, 2), secs(3))
	require.NoError(t, err)
	assert.Equal(t, Series{Name: "ab", Step: time.Second, Values: []float64{1, 2, 3}}, got)
	_, err = Concat("x", secs(1), Series{Name: "m", Step: time.Minute, Values: []float64{1}})
	assert.ErrorContains(t, err, `concat x: part 1 ("m") has step 1m0s, part 0 has 1s`)
	_, err = Concat("x")
	assert.ErrorContains(t, err, "no series")
}

func TestSeriesBasics(t *testing.T) {
	s := Series{Step: 2 * time.Second, Values: []float64{2, 6}}
	assert.Equal(t, 2, s.Len())
	assert.Equal(t, 4*time.Second, s.Span())
	assert.Equal(t, 8.0, s.Total())
	assert.Equal(t, 3.0, s.Rate(1))
	assert.Equal(t, 2.0, s.MeanRate())
	assert.True(t, math.IsNaN(Series{Step: time.Second}.MeanRate()))
	c := s.Clone()
	c.Values[0] = 7
	assert.Equal(t, 2.0, s.Values[0])

	assert.ErrorContains(t, Series{}.Validate(), "series (unnamed): step 0s must be positive")
	assert.ErrorContains(t, secs(1, math.Inf(1)).Validate(), "value 1 (at 1s) is +Inf")
	assert.ErrorContains(t, secs(math.NaN()).Validate(), "value 0 (at 0s) is NaN")
}
