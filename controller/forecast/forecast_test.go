package forecast

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// arSeries simulates log(1+y) as an AR(2) around a level, with noise sd.
func arSeries(n int, c, phi1, phi2, sd float64, seed uint64) []float64 {
	rnd := rand.New(rand.NewPCG(seed, 1))
	x := []float64{c / (1 - phi1 - phi2), c / (1 - phi1 - phi2)}
	for len(x) < n {
		t := len(x)
		x = append(x, c+phi1*x[t-1]+phi2*x[t-2]+sd*rnd.NormFloat64())
	}
	y := make([]float64, n)
	for i, v := range x {
		y[i] = math.Expm1(v)
	}
	return y
}

func TestFitRecoversAR(t *testing.T) {
	y := arSeries(5000, 1.0, 0.6, 0.2, 0.05, 7)
	m, err := Fit(Config{Order: 2}, y)
	require.NoError(t, err)
	assert.InDelta(t, 0.6, m.Coef[1], 0.05)
	assert.InDelta(t, 0.2, m.Coef[2], 0.05)
	assert.InDelta(t, 0.05, m.Sigma, 0.005)
}

// daily is a positive rate with a period of 48 steps and some noise.
func daily(n int, seed uint64) []float64 {
	rnd := rand.New(rand.NewPCG(seed, 2))
	y := make([]float64, n)
	for i := range y {
		y[i] = 100 * (1.5 + math.Sin(2*math.Pi*float64(i)/48)) * math.Exp(0.02*rnd.NormFloat64())
	}
	return y
}

func TestSeasonalBeatsPlainAR(t *testing.T) {
	y := daily(48*20, 3)
	train, test := y[:48*18], y[48*18:]
	mape := func(cfg Config) float64 {
		m, err := Fit(cfg, train)
		require.NoError(t, err)
		hist := append([]float64(nil), train...)
		var sum float64
		for _, v := range test {
			f, err := m.Forecast(make([]float64, 1), hist)
			require.NoError(t, err)
			sum += math.Abs(f[0]-v) / v
			hist = append(hist, v)
		}
		return sum / float64(len(test))
	}
	seasonal, plain := mape(Config{Order: 2, Seasons: 2, Period: 48}), mape(Config{Order: 2})
	assert.Less(t, seasonal, 0.04, "one step ahead, seasonal")
	assert.Less(t, seasonal, plain, "the seasonal lags help")

	// Many steps ahead the plain AR decays to the mean; the seasonal model
	// keeps the shape.
	m, err := Fit(Config{Order: 2, Seasons: 2, Period: 48}, train)
	require.NoError(t, err)
	f, err := m.Forecast(make([]float64, 48), train)
	require.NoError(t, err)
	var sum float64
	for h, v := range test[:48] {
		sum += math.Abs(f[h]-v) / v
	}
	assert.Less(t, sum/48, 0.08, "a period ahead")
}

func TestFitErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		y    []float64
		want string
	}{
		{Config{Order: 0}, daily(100, 1), "order 0"},
		{Config{Order: 2, Seasons: 1, Period: 2}, daily(100, 1), "period 2 must exceed the order 2"},
		{Config{Order: 1, Ridge: -1}, daily(100, 1), "ridge"},
		{Config{Order: 2, Seasons: 1, Period: 48}, daily(50, 1), "history too short: 50 values, the model needs 56"},
		{Config{Order: 1}, []float64{1, 2, 3, -1, 5, 6, 7}, "value 3 is -1"},
		{Config{Order: 1}, []float64{1, 2, 3, math.NaN(), 5, 6, 7}, "value 3 is NaN"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			_, err := Fit(tt.cfg, tt.y)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	m, err := Fit(Config{Order: 3}, daily(100, 1))
	require.NoError(t, err)
	_, err = m.Forecast(make([]float64, 1), []float64{1, 2})
	assert.ErrorIs(t, err, ErrShort)
}

func TestFlatHistory(t *testing.T) {
	y := make([]float64, 60)
	for i := range y {
		y[i] = 42
	}
	m, err := Fit(Config{Order: 2}, y)
	require.NoError(t, err, "the ridge keeps a flat history solvable")
	f, err := m.Forecast(make([]float64, 5), y)
	require.NoError(t, err)
	for _, v := range f {
		assert.InDelta(t, 42, v, 1e-3)
	}
}

func TestOnline(t *testing.T) {
	cfg := Config{Order: 2, Seasons: 1, Period: 48}
	_, err := NewOnline(cfg, 10, 1)
	assert.ErrorContains(t, err, "window 10")
	_, err = NewOnline(cfg, 200, 0)
	assert.ErrorContains(t, err, "refit 0")

	o, err := NewOnline(cfg, 48*6, 24)
	require.NoError(t, err)
	assert.Zero(t, o.Next())
	y := daily(48*8, 5)
	var errNaive, errModel float64
	for i, v := range y {
		if i > 0 && i >= 48*6 {
			errNaive += math.Abs(y[i-1]-v) / v
			errModel += math.Abs(o.Next()-v) / v
		}
		require.NoError(t, o.Observe(v))
		switch {
		case i == 0:
			assert.Equal(t, v, o.Next(), "naive at first")
		case i+1 >= cfg.MinHistory():
			assert.True(t, o.Seasonal(), "seasonal once the history allows, step %d", i)
		}
	}
	assert.Equal(t, 48*6, o.Len())
	assert.Less(t, errModel, errNaive, "the model beats the last value")
	assert.ErrorContains(t, o.Observe(-1), "observed -1")
}

func ExampleFit() {
	// A rate that repeats every 4 steps.
	var y []float64
	for range 10 {
		y = append(y, 10, 20, 40, 20)
	}
	m, err := Fit(Config{Order: 1, Seasons: 1, Period: 4}, y)
	if err != nil {
		panic(err)
	}
	f, err := m.Forecast(make([]float64, 4), y)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.0f\n", f)
	// Output: [10 20 40 20]
}
